// KServe v2 JSON infer requests (server/kserve/decode_json): the body of
// POST /v2/models/{m}/infer, parsed and decoded against the bundled model's signature.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/kserve/decode_json.h"
#include "tests/fuzz/kserve_fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tessera::kserve::ModelSignature model = tessera::fuzz::fuzz_model_signature();
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  (void)tessera::kserve::decode_infer_request_body(body, model);
  return 0;
}
