// KServe v2 HTTP infer bodies with Triton's binary tensor data extension
// (server/kserve/decode_json: decode_infer_request_body with the Inference-Header-Content-Length
// value): the input's first line is that header's value, the rest the body (the JSON header,
// then the binary tensors), decoded against the bundled model's signature.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/kserve/decode_json.h"
#include "tests/fuzz/kserve_fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tessera::kserve::ModelSignature model = tessera::fuzz::fuzz_model_signature();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  (void)tessera::kserve::decode_infer_request_body(input.substr(newline + 1), model, {}, nullptr,
                                                   input.substr(0, newline));
  return 0;
}
