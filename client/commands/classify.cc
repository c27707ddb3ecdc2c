// tessera classify: sends each image to the daemon and prints its top-k.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>

#include "client/commands/commands.h"
#include "client/commands/common.h"

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
    std::cout << "  " << ++rank << ". " << c.label() << std::string(width - c.label().size(), ' ')
              << line << "\n";
  }
  const v1::Timing& t = response.timing();
  std::cout << "  timing: decode " << t.decode_us() << " µs, queue " << t.queue_us()
            << " µs, inference " << t.inference_us() << " µs (fabric " << t.fabric_us() << " µs, host "
            << t.host_us() << " µs; modeled fabric " << t.modeled_fabric_us() << " µs), total " << t.total_us()
            << " µs\n";
}

}  // namespace

CLI::App* add_classify_command(CLI::App& app, ClassifyArgs& args) {
  CLI::App* cmd = app.add_subcommand("classify", "Classify image files (JPEG or PNG)");
  args.server = kDefaultServer;
  cmd->add_option("--server", args.server, "tesserad's gRPC address, HOST:PORT")->capture_default_str();
  cmd->add_option("--model", args.model, "Model name (default: the daemon's default model)");
  cmd->add_option("--top-k", args.top_k, "Classes to show per image")
      ->capture_default_str()->check(CLI::Range(1u, 100000u));
  cmd->add_flag("--json", args.json, "Print one JSON object per image per line");
  cmd->add_option("--timeout", args.timeout_s, "Seconds to wait for each answer")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("images", args.images, "Image files")->required();
  return cmd;
}

int run_classify(const ClassifyArgs& args) {
  auto stub = make_stub(args.server);
  bool failed = false;
  bool first = true;
  for (const std::string& file : args.images) {
    ReadError error;
    std::optional<std::string> image = read_file(file, error);
    if (!image) {
      std::cerr << "tessera: " << file << ": " << error.message << "\n";
      if (args.json) {
        const nlohmann::json out = {{"file", file}, {"error", {{"code", error.code}, {"message", error.message}}}};
        std::cout << out.dump() << "\n";
      }
      failed = true;
      continue;
    }
    v1::ClassifyRequest request;
    request.set_model(args.model);
    request.set_image(std::move(*image));
    request.set_top_k(args.top_k);
    v1::ClassifyResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000)));
    const grpc::Status status = stub->Classify(&context, request, &response);
    if (!status.ok()) {
      std::cerr << "tessera: " << file << ": " << grpc_code_name(status.error_code()) << ": "
                << status.error_message() << "\n";
      if (args.json) {
        const nlohmann::json out = {{"file", file}, {"error", error_json(status)}};
        std::cout << out.dump() << "\n";
      }
      failed = true;
      continue;
    }
    if (args.json) {
      nlohmann::json out = to_json(response);
      out["file"] = file;
      std::cout << out.dump() << "\n";
    } else {
      if (!first) std::cout << "\n";
      print_text(file, response);
    }
    first = false;
    std::cout.flush();
  }
  return failed ? 1 : 0;
}

}  // namespace tessera::client
