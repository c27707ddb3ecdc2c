// What the client's commands share: the connection (address, TLS, bearer token), error names,
// JSON conversions, image-file listing and terminal helpers.
#pragma once

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tessera/v1/classifier.grpc.pb.h"
#include "tessera/v1/telemetry.grpc.pb.h"

namespace tessera::client {

// Default daemon address.
inline constexpr const char* kDefaultServer = "127.0.0.1:50051";

// How to reach a daemon: every gRPC command takes these flags.
struct Connection {
  std::string server = kDefaultServer;  // "HOST:PORT"
  std::string tls_ca;                   // PEM root CA file; "" = plaintext
  std::string token;                    // bearer token; "" = none (also $TESSERA_TOKEN)
};

// Registers --server, --tls-ca and --token (env TESSERA_TOKEN) on `cmd`.
void add_connection_options(CLI::App* cmd, Connection& connection);

// A channel to `server` with `connection`'s credentials (TLS when tls_ca is set); connects
// lazily. Throws std::runtime_error when the CA file cannot be read.
std::shared_ptr<grpc::Channel> make_channel(const Connection& connection, const std::string& server);
inline std::shared_ptr<grpc::Channel> make_channel(const Connection& connection) {
  return make_channel(connection, connection.server);
}

// Prepares a call: the bearer token as `authorization: Bearer <token>` metadata and a deadline
// `timeout` from now (none when timeout is zero).
void prepare_context(grpc::ClientContext& context, const Connection& connection, std::chrono::microseconds timeout);

// "INVALID_ARGUMENT"
const char* grpc_code_name(grpc::StatusCode code);

// The same JSON shapes as tesserad's HTTP API.
nlohmann::json to_json(const v1::ClassifyResponse& response);
nlohmann::json to_json(const v1::ModelInfo& model);
nlohmann::json to_json(const v1::TelemetrySnapshot& snapshot);
nlohmann::json error_json(const grpc::Status& status);

// Image files (.jpg, .jpeg, .png, any case) directly in `dir`, sorted by path.
std::vector<std::filesystem::path> list_images(const std::filesystem::path& dir);

// Whether file descriptor `fd` is a terminal.
bool is_tty(int fd);

// "[#######.......]  12/40  1 failed" redrawn in place on stderr (a terminal's).
void draw_progress(size_t done, size_t total, size_t failed);

// Seconds as a std::chrono duration for deadlines.
inline std::chrono::microseconds seconds_to_us(double seconds) {
  return std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

// Set by SIGINT/SIGTERM once install_interrupt_handler() ran; commands that run until stopped
// poll it and finish cleanly.
bool interrupted();
void install_interrupt_handler();

}  // namespace tessera::client
