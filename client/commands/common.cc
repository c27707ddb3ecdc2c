#include "client/commands/common.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tessera::client {

void add_connection_options(CLI::App* cmd, Connection& connection) {
  cmd->add_option("--server", connection.server,
                  "tesserad's gRPC address, HOST:PORT (with --protocol kserve: any KServe server's, grpc://HOST:PORT "
                  "or http://HOST:PORT)")
      ->capture_default_str();
  cmd->add_option("--tls-ca", connection.tls_ca, "Use TLS, trusting this PEM root CA file")->check(CLI::ExistingFile);
  cmd->add_option("--token", connection.token, "Bearer token sent as `authorization: Bearer TOKEN` on every call")
      ->envname("TESSERA_TOKEN");
}

std::shared_ptr<grpc::Channel> make_channel(const Connection& connection, const std::string& server) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (connection.tls_ca.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    std::ifstream in(connection.tls_ca, std::ios::binary);
    std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read --tls-ca " + connection.tls_ca);
    if (pem.empty()) throw std::runtime_error("--tls-ca " + connection.tls_ca + " is empty or unreadable");
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = std::move(pem);
    credentials = grpc::SslCredentials(options);
  }
  return grpc::CreateCustomChannel(server, credentials, args);
}

void prepare_context(grpc::ClientContext& context, const Connection& connection, std::chrono::microseconds timeout) {
  // Metadata rather than CallCredentials: gRPC refuses call credentials on plaintext channels,
  // and a daemon on loopback without TLS may still want the token.
  if (!connection.token.empty()) context.AddMetadata("authorization", "Bearer " + connection.token);
  if (timeout.count() > 0) context.set_deadline(std::chrono::system_clock::now() + timeout);
}

const char* grpc_code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

nlohmann::json to_json(const v1::ClassifyResponse& response) {
  nlohmann::json classes = nlohmann::json::array();
  for (const v1::Class& c : response.classes()) {
    classes.push_back({{"index", c.index()}, {"label", c.label()}, {"score", c.score()}});
  }
  const v1::Timing& t = response.timing();
  return {{"model", response.model()},
          {"model_version", response.model_version()},
          {"request_id", response.request_id()},
          {"classes", std::move(classes)},
          {"timing",
           {{"decode_us", t.decode_us()},
            {"queue_us", t.queue_us()},
            {"inference_us", t.inference_us()},
            {"total_us", t.total_us()},
            {"fabric_us", t.fabric_us()},
            {"host_us", t.host_us()},
            {"modeled_fabric_us", t.modeled_fabric_us()},
            {"batch_size", t.batch_size()},
            {"modeled_energy_uj", t.modeled_energy_uj()}}}};
}

nlohmann::json to_json(const v1::ModelInfo& model) {
  return {{"name", model.name()},
          {"format", model.format()},
          {"input",
           {{"width", model.input_width()}, {"height", model.input_height()}, {"channels", model.input_channels()}}},
          {"labels", std::vector<std::string>(model.labels().begin(), model.labels().end())},
          {"precision", model.precision()},
          {"device", model.device()},
          {"version", model.version()},
          {"devices", std::vector<uint32_t>(model.devices().begin(), model.devices().end())}};
}

nlohmann::json error_json(const grpc::Status& status) {
  return {{"code", grpc_code_name(status.error_code())}, {"message", status.error_message()}};
}

nlohmann::json to_json(const v1::TelemetrySnapshot& s) {
  using nlohmann::json;
  auto stage_json = [](const v1::StageLatency& l) {
    return json{{"stage", l.stage()},   {"p50_us", l.p50_us()}, {"p90_us", l.p90_us()},
                {"p99_us", l.p99_us()}, {"max_us", l.max_us()}, {"count", l.count()}};
  };
  json models = json::array();
  for (const v1::ModelTelemetry& m : s.models()) {
    json batches = json::array();
    for (const v1::BatchSizeCount& b : m.batch_sizes())
      batches.push_back({{"size", b.size()}, {"batches", b.batches()}});
    json latency = json::array();
    for (const v1::StageLatency& l : m.latency()) latency.push_back(stage_json(l));
    models.push_back({{"name", m.name()},
                      {"queue_depth", m.queue_depth()},
                      {"images_per_second", m.images_per_second()},
                      {"requests_ok", m.requests_ok()},
                      {"requests_failed", m.requests_failed()},
                      {"batch_sizes", std::move(batches)},
                      {"latency", std::move(latency)}});
  }
  json rails = json::object();
  for (const auto& [name, watts] : s.rails_watts()) rails[name] = watts;
  return {{"time_unix_ms", s.time_unix_ms()},
          {"device_kind", s.device_kind()},
          {"device_name", s.device_name()},
          {"board", s.board()},
          {"power_watts", s.has_power_watts() ? json(s.power_watts()) : json(nullptr)},
          {"power_source", s.power_source()},
          {"energy_joules", s.energy_joules()},
          {"temperature_c", s.has_temperature_c() ? json(s.temperature_c()) : json(nullptr)},
          {"temperature_source", s.temperature_source()},
          {"rails_watts", std::move(rails)},
          {"fabric_utilization", s.fabric_utilization()},
          {"images_per_second", s.images_per_second()},
          {"queue_depth", s.queue_depth()},
          {"modeled_energy_joules", s.modeled_energy_joules()},
          {"ready", s.ready()},
          {"models", std::move(models)}};
}

std::vector<std::filesystem::path> list_images(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::string ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".png") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_tty(int fd) { return ::isatty(fd) == 1; }

// "[#######.......]  12/40  1 failed" redrawn in place on stderr.
void draw_progress(size_t done, size_t total, size_t failed) {
  constexpr int kWidth = 30;
  const int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar += std::string(static_cast<size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r[%s] %zu/%zu", bar.c_str(), done, total);
  if (failed) std::fprintf(stderr, "  %zu failed", failed);
  std::fprintf(stderr, "\033[K");
  std::fflush(stderr);
}

namespace {
std::atomic<bool> g_interrupted{false};
void on_interrupt(int) { g_interrupted.store(true); }
}  // namespace

bool interrupted() { return g_interrupted.load(); }

void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace tessera::client
