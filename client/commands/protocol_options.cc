#include "client/commands/protocol_options.h"

namespace tessera::client {
namespace {

// Removes `scheme` from the front of `server` (and a trailing '/'); whether it was there.
bool strip_scheme(std::string& server, const std::string& scheme) {
  if (server.rfind(scheme, 0) != 0) return false;
  server.erase(0, scheme.size());
  while (!server.empty() && server.back() == '/') server.pop_back();
  return true;
}

// The transport a --server URL names, checked against -i; "" when --server has no scheme.
std::string transport_of_scheme(std::string& server) {
  if (strip_scheme(server, "https://"))
    throw CLI::ValidationError("--server",
                               "https:// is not supported: KServe over HTTP is plaintext here "
                               "(use gRPC with --tls-ca for TLS)");
  if (strip_scheme(server, "http://")) return "http";
  if (strip_scheme(server, "grpc://")) return "grpc";
  return "";
}

void resolve(const CLI::App& cmd, ProtocolOptions& options, Connection& connection) {
  const std::string scheme = transport_of_scheme(connection.server);
  if (!scheme.empty()) {
    if (cmd.count("-i") > 0 && options.transport != scheme)
      throw CLI::ValidationError("--server", "its scheme says " + scheme + ", -i says " + options.transport);
    options.transport = scheme;
  }
  if (!options.kserve()) {
    for (const char* flag :
         {"-i", "--input-format", "--preprocess", "--input-tensor-format", "--output-tensor-format"}) {
      if (cmd.count(flag) > 0) throw CLI::ValidationError(flag, "needs --protocol kserve");
    }
    if (options.http()) throw CLI::ValidationError("--server", "http:// needs --protocol kserve (tessera.v1 is gRPC)");
    return;
  }
  if (options.http() && cmd.count("--server") == 0) connection.server = kDefaultHttpServer;
  if (options.http() && !connection.tls_ca.empty())
    throw CLI::ValidationError("--tls-ca", "KServe over HTTP is plaintext here; use -i grpc for TLS");
  if (!options.http() && (cmd.count("--input-tensor-format") > 0 || cmd.count("--output-tensor-format") > 0))
    throw CLI::ValidationError("--input-tensor-format", "the tensor formats are HTTP's (-i http)");
  if (!options.preprocess.empty() && options.input_format == "bytes")
    throw CLI::ValidationError("--preprocess", "is for FP32 input, not --input-format bytes");
}

}  // namespace

void add_protocol_options(CLI::App* cmd, ProtocolOptions& options, Connection& connection) {
  cmd->add_option("--protocol", options.protocol,
                  "tessera: the tessera.v1 gRPC API; kserve: the KServe v2 protocol (Triton, tesserad, any KServe "
                  "server)")
      ->check(CLI::IsMember({"tessera", "kserve"}))
      ->capture_default_str();
  cmd->add_option("-i,--transport", options.transport,
                  "KServe transport, as perf_analyzer's -i: grpc or http (default port 8080 when --server is not "
                  "given); a --server of http://HOST:PORT or grpc://HOST:PORT says it too")
      ->check(CLI::IsMember({"grpc", "http"}))
      ->capture_default_str();
  cmd->add_option("--input-format", options.input_format,
                  "KServe input: bytes (the encoded JPEG/PNG as a BYTES element), fp32 (decoded and preprocessed "
                  "here into the model's tensor), auto (the model metadata's datatype; bytes for tesserad)")
      ->check(CLI::IsMember({"auto", "bytes", "fp32"}))
      ->capture_default_str();
  cmd->add_option("--preprocess", options.preprocess,
                  "KServe fp32 input: a tessera model folder whose model.toml [input] says how to scale and "
                  "normalise (default: pixel / 255)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--input-tensor-format", options.input_tensor_format,
                  "KServe over HTTP: binary (Triton's binary tensor data extension) or json")
      ->check(CLI::IsMember({"binary", "json"}))
      ->capture_default_str();
  cmd->add_option("--output-tensor-format", options.output_tensor_format,
                  "KServe over HTTP: ask for outputs as binary data or json")
      ->check(CLI::IsMember({"binary", "json"}))
      ->capture_default_str();
  cmd->callback([cmd, &options, &connection] { resolve(*cmd, options, connection); });
}

}  // namespace tessera::client
