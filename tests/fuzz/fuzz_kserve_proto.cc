// KServe v2 gRPC infer requests (server/kserve/decode_grpc): a ModelInferRequest parsed from the
// wire bytes, then decoded against the bundled model's signature.
#include <cstddef>
#include <cstdint>

#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/decode_grpc.h"
#include "tests/fuzz/kserve_fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tessera::kserve::ModelSignature model = tessera::fuzz::fuzz_model_signature();
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)tessera::kserve::decode_infer_request(request, model);
  return 0;
}
