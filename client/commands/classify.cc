// tessera classify: sends each image (directories expanded) to the daemon and prints its top-k,
// as text, JSON lines and/or a CSV file; failures are reported per file and counted.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "client/commands/commands.h"
#include "client/commands/common.h"
#include "client/kserve/kserve_model.h"

namespace tessera::client {
namespace {

// Why a file could not be read, as a gRPC-style code and a message.
struct ReadError {
  const char* code = "UNKNOWN";
  std::string message;
};

std::optional<std::string> read_file(const std::string& path, ReadError& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error.code = errno == ENOENT ? "NOT_FOUND" : errno == EACCES ? "PERMISSION_DENIED" : "UNKNOWN";
    error.message = std::string("cannot read: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    error.message = "cannot read: read error";
    return std::nullopt;
  }
  return data;
}

// "  1. Ankle boot  97.31%" lines, labels padded to one column, then the timing line.
void print_text(const std::string& file, const v1::ClassifyResponse& response) {
  std::cout << file << "\n";
  size_t width = 0;
  for (const v1::Class& c : response.classes()) width = std::max(width, c.label().size());
  int rank = 0;
  for (const v1::Class& c : response.classes()) {
    char line[64];
    std::snprintf(line, sizeof line, " %6.2f%%", static_cast<double>(c.score()) * 100.0);
    std::cout << "  " << ++rank << ". " << c.label() << std::string(width - c.label().size(), ' ') << line << "\n";
  }
  if (!response.has_timing()) return;  // KServe answers carry no timing
  const v1::Timing& t = response.timing();
  std::cout << "  timing: decode " << t.decode_us() << " µs, queue " << t.queue_us() << " µs, inference "
            << t.inference_us() << " µs (fabric " << t.fabric_us() << " µs, host " << t.host_us()
            << " µs; modeled fabric " << t.modeled_fabric_us() << " µs), total " << t.total_us() << " µs\n";
}

// CSV field, quoted when it holds a separator, quote or line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The files to classify: arguments as given, directories replaced by their images (sorted). A
// directory without images is an error of its own (returned in `empty_dirs`).
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs, std::vector<std::string>& empty_dirs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) {
      const auto images = list_images(input);
      if (images.empty()) empty_dirs.push_back(input);
      for (const auto& p : images) files.push_back(p.string());
    } else {
      files.push_back(input);
    }
  }
  return files;
}

// Where results go: stdout (text, or one JSON object per line), the --csv file, and error lines
// on stderr. The progress bar shares stderr with the error lines; it is only drawn on a terminal,
// and each error line first clears it.
class ClassifyOutput {
 public:
  ClassifyOutput(const ClassifyArgs& args, bool progress) : args_(args), progress_(progress) {}

  bool progress() const { return progress_; }

  // Opens --csv (when given) and writes its header; false (said on stderr) when it cannot.
  bool open_csv() {
    if (args_.csv.empty()) return true;
    csv_.open(args_.csv);
    if (!csv_) {
      std::cerr << "tessera: cannot write " << args_.csv << ": " << std::strerror(errno) << "\n";
      return false;
    }
    csv_ << "file,status,error";
    for (unsigned k = 1; k <= args_.top_k; ++k) csv_ << ",label_" << k << ",score_" << k;
    csv_ << ",total_us,inference_us\n";
    return true;
  }

  // A file that failed: `line` on stderr, `error` as its JSON line, `code` and `message` in the CSV.
  void failure(const std::string& file, const std::string& line, const nlohmann::json& error, const std::string& code,
               const std::string& message) {
    if (progress_) std::cerr << "\r\033[K";
    std::cerr << line << "\n";
    if (args_.json) {
      const nlohmann::json out = {{"file", file}, {"error", error}};
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    if (!csv_.is_open()) return;
    csv_ << csv_field(file) << "," << code << "," << csv_field(message);
    for (unsigned k = 0; k < args_.top_k; ++k) csv_ << ",,";
    csv_ << ",,\n";
  }

  void success(const std::string& file, const v1::ClassifyResponse& response) {
    if (csv_.is_open()) write_csv_row(file, response);
    if (args_.json) {
      nlohmann::json out = to_json(response);
      if (!response.has_timing()) out.erase("timing");
      out["file"] = file;
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      if (!first_) std::cout << "\n";
      print_text(file, response);
    }
    first_ = false;
    std::cout.flush();
  }

  // Flushes the CSV; false (said on stderr) when writing it failed.
  bool close_csv() {
    if (!csv_.is_open()) return true;
    csv_.flush();
    if (!csv_) {
      std::cerr << "tessera: error writing " << args_.csv << "\n";
      return false;
    }
    return true;
  }

 private:
  void write_csv_row(const std::string& file, const v1::ClassifyResponse& response) {
    csv_ << csv_field(file) << ",OK,";
    for (unsigned k = 0; k < args_.top_k; ++k) {
      if (k < static_cast<unsigned>(response.classes_size())) {
        char score[32];
        std::snprintf(score, sizeof score, "%.6f", static_cast<double>(response.classes(static_cast<int>(k)).score()));
        csv_ << "," << csv_field(response.classes(static_cast<int>(k)).label()) << "," << score;
      } else {
        csv_ << ",,";
      }
    }
    csv_ << "," << response.timing().total_us() << "," << response.timing().inference_us() << "\n";
  }

  const ClassifyArgs& args_;
  const bool progress_;
  std::ofstream csv_;
  bool first_ = true;  // no result printed yet
};

// Folders without images: an error each (not in the CSV); how many.
size_t report_empty_dirs(const std::vector<std::string>& empty_dirs, bool as_json) {
  for (const std::string& dir : empty_dirs) {
    std::cerr << "tessera: " << dir << ": no .jpg/.jpeg/.png files in this folder\n";
    if (as_json) {
      const nlohmann::json out = {{"file", dir},
                                  {"error", {{"code", "NOT_FOUND"}, {"message", "no images in folder"}}}};
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
  }
  return empty_dirs.size();
}

// One image's classification by whichever protocol: its status, and the answer when OK.
using ClassifyCall = std::function<grpc::Status(const std::string& image, v1::ClassifyResponse& response)>;

ClassifyCall tessera_call(const ClassifyArgs& args) {
  std::shared_ptr<v1::Classifier::Stub> stub = v1::Classifier::NewStub(make_channel(args.connection));
  return [stub, &args](const std::string& image, v1::ClassifyResponse& response) {
    v1::ClassifyRequest request;
    request.set_model(args.model);
    request.set_image(image);
    request.set_top_k(args.top_k);
    grpc::ClientContext context;
    prepare_context(context, args.connection, seconds_to_us(args.timeout_s));
    return stub->Classify(&context, request, &response);
  };
}

// KServe v2: the model's metadata first (said on stderr when it fails: nullptr), then a
// ModelInfer per image asking the classification extension for the top k.
ClassifyCall kserve_call(const ClassifyArgs& args) {
  std::shared_ptr<kserve::KserveTransport> transport =
      args.protocol.http()
          ? kserve::make_http_transport(args.connection, {args.protocol.input_tensor_format == "binary",
                                                          args.protocol.output_tensor_format == "binary"})
          : kserve::make_grpc_transport(args.connection, make_channel(args.connection));
  auto plan = std::make_shared<kserve::ModelPlan>();
  const grpc::Status status =
      kserve::plan_model(*transport, {args.model, "", args.protocol.input_format, args.protocol.preprocess}, *plan);
  if (!status.ok()) {
    std::cerr << "tessera: " << args.connection.server << ": " << grpc_code_name(status.error_code()) << ": "
              << status.error_message() << "\n";
    return nullptr;
  }
  return [transport, plan, &args](const std::string& image, v1::ClassifyResponse& response) {
    auto input = kserve::make_input(*plan, image);
    if (!input) return grpc::Status(static_cast<grpc::StatusCode>(input.status().code()), input.status().message());
    kserve::InferSpec spec{plan->model, plan->version, "", std::move(input).value(), plan->output_name, args.top_k};
    kserve::InferAnswer answer;
    grpc::Status answered = transport->infer(spec, seconds_to_us(args.timeout_s), answer);
    if (answered.ok()) response = kserve::to_classify_response(answer);
    return answered;
  };
}

// Reads and classifies one file and writes its result; false when it failed.
bool classify_file(const ClassifyCall& call, const std::string& file, ClassifyOutput& output) {
  ReadError error;
  std::optional<std::string> image = read_file(file, error);
  if (!image) {
    output.failure(file, "tessera: " + file + ": " + error.message, {{"code", error.code}, {"message", error.message}},
                   error.code, error.message);
    return false;
  }
  v1::ClassifyResponse response;
  const grpc::Status status = call(*image, response);
  if (!status.ok()) {
    output.failure(file,
                   "tessera: " + file + ": " + grpc_code_name(status.error_code()) + ": " + status.error_message(),
                   error_json(status), grpc_code_name(status.error_code()), status.error_message());
    return false;
  }
  output.success(file, response);
  return true;
}

}  // namespace

CLI::App* add_classify_command(CLI::App& app, ClassifyArgs& args) {
  CLI::App* cmd = app.add_subcommand("classify", "Classify image files (JPEG or PNG) and folders of them");
  add_connection_options(cmd, args.connection);
  add_protocol_options(cmd, args.protocol, args.connection);
  cmd->add_option("-m,--model", args.model,
                  "Model name (default: the daemon's default model; KServe: the first READY model)");
  cmd->add_option("--top-k", args.top_k, "Classes to show per image (KServe: the classification extension's count)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  cmd->add_flag("--json", args.json, "Print one JSON object per image per line");
  cmd->add_option("--csv", args.csv, "Also write one CSV row per image to this file");
  cmd->add_option("--timeout", args.timeout_s, "Seconds to wait for each answer")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("images", args.images, "Image files, or folders of .jpg/.jpeg/.png files (sorted)")->required();
  return cmd;
}

int run_classify(const ClassifyArgs& args) {
  const ClassifyCall call = args.protocol.kserve() ? kserve_call(args) : tessera_call(args);
  if (!call) return 1;
  std::vector<std::string> empty_dirs;
  const std::vector<std::string> files = expand_inputs(args.images, empty_dirs);
  size_t failed = report_empty_dirs(empty_dirs, args.json);
  ClassifyOutput output(args, is_tty(STDERR_FILENO) && files.size() > 1);
  if (!output.open_csv()) return 1;
  size_t done = 0;
  for (const std::string& file : files) {
    if (output.progress()) draw_progress(done, files.size(), failed);
    ++done;
    if (!classify_file(call, file, output)) ++failed;
  }
  if (output.progress()) {
    draw_progress(done, files.size(), failed);
    std::cerr << "\n";
  }
  if (!output.close_csv()) return 1;
  if (failed) {
    std::cerr << "tessera: " << failed << " of " << files.size() + empty_dirs.size() << " failed\n";
  }
  return failed ? 1 : 0;
}

}  // namespace tessera::client
