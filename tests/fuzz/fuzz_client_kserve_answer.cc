// The CLI's reading of a KServe server's inference answer (client/kserve/kserve_codec): what any
// server `tessera classify/bench --protocol kserve` is pointed at may send. The first byte picks
// the transport: even, HTTP, with the next 4 bytes (little-endian) the Inference-Header-Content-
// Length (0xffffffff: none, a JSON-only answer) and the rest the body; odd, gRPC, the rest a
// ModelInferResponse. The answer is read for the output "probabilities" and each class kept.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "client/kserve/kserve_codec.h"

namespace {

void read_http(std::string_view rest) {
  if (rest.size() < 4) return;
  uint32_t length = 0;
  for (int i = 3; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(rest[static_cast<size_t>(i)]);
  const std::optional<size_t> header_length = length == 0xffffffffu ? std::nullopt : std::optional<size_t>(length);
  auto answer = tessera::client::kserve::http_answer(rest.substr(4), header_length, "probabilities");
  if (answer) {
    for (const auto& c : answer->classes) static_cast<void>(c.label.size() + static_cast<size_t>(c.index));
  }
  static_cast<void>(tessera::client::kserve::http_error_message(rest.substr(4)));
}

void read_grpc(std::string_view rest) {
  inference::ModelInferResponse response;
  if (!response.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) return;
  auto answer = tessera::client::kserve::grpc_answer(response, "probabilities");
  if (answer) {
    for (const auto& c : answer->classes) static_cast<void>(c.label.size() + static_cast<size_t>(c.index));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    read_http(rest);
  } else {
    read_grpc(rest);
  }
  return 0;
}
