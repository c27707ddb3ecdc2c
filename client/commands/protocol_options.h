// `--protocol tessera|kserve` and the KServe v2 flags of classify and bench: the transport
// (`-i grpc|http` as perf_analyzer spells it, or the scheme of --server: http://, grpc://), the
// input's form and, over HTTP, whether tensors use Triton's binary tensor data extension.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "client/commands/common.h"

namespace tessera::client {

// The HTTP port a KServe server listens on when --server is not given with -i http.
inline constexpr const char* kDefaultHttpServer = "127.0.0.1:8080";

struct ProtocolOptions {
  std::string protocol = "tessera";             // "tessera" (tessera.v1) | "kserve" (KServe v2)
  std::string transport = "grpc";               // kserve: "grpc" | "http"
  std::string input_format = "auto";            // kserve: "auto" | "bytes" | "fp32"
  std::string preprocess;                       // kserve fp32: a model folder whose [input] says how
  std::string input_tensor_format = "binary";   // kserve http: "binary" | "json"
  std::string output_tensor_format = "binary";  // kserve http: "binary" | "json"

  bool kserve() const { return protocol == "kserve"; }
  bool http() const { return transport == "http"; }
};

// Registers the flags on `cmd` and a callback that, once `cmd` is parsed, reads a scheme off
// `connection.server`, defaults the HTTP address and refuses combinations that cannot work (a
// usage error: CLI::ValidationError).
void add_protocol_options(CLI::App* cmd, ProtocolOptions& options, Connection& connection);

}  // namespace tessera::client
