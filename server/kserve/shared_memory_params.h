// The data path of the system shared-memory extension: a tensor whose parameters carry
// "shared_memory_region" (string), "shared_memory_byte_size" (int64) and optionally
// "shared_memory_offset" (int64, default 0) has its bytes in that registered region (shared_memory.h)
// instead of in the request or the response. Both transports: gRPC InferParameter maps and the
// JSON "parameters" objects.
//
// An input's bytes are read once while decoding, in the raw layout (raw_contents.h): FP32
// little-endian, UINT8 one byte each, BYTES length-prefixed; byte_size must be the tensor's size
// (a batch of images too). An output in a region is the FP32 tensor [B, N] of a request of B images
// (not with "classification", as Triton refuses it); byte_size must hold its B * N * 4 bytes. The answer keeps the
// output's name, datatype and shape and carries no data (gRPC: an empty raw_output_contents entry; JSON: no "data"), as
// Triton answers.
//
// Hooks (the only lines outside these files): decode_grpc.cc and decode_json.cc call
// shm_input_bytes() before reading an input's data and add_shm_output() for each requested output;
// the infer callbacks (kserve_grpc_service.cc, kserve_stream_infer.cc, kserve_routes.cc) call
// write_shm_outputs() before building the response.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"
#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/infer_request.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/shared_memory.h"

namespace tessera::kserve {

// Where a tensor's bytes are, as its parameters say.
struct ShmRef {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// An output to be written into a region when answered; holds the region (an unregister meanwhile
// leaves it open until then).
struct ShmOutput {
  std::string name;
  ShmRef ref;
  std::shared_ptr<const SharedMemoryRegion> region;
};

// The shared memory of one request: the registry it may use (null: none on this door) and the
// outputs that go into regions, filled while decoding.
struct ShmRequest {
  const SharedMemoryRegistry* registry = nullptr;
  std::vector<ShmOutput> outputs;
};

using ProtoParameters = google::protobuf::Map<std::string, inference::InferParameter>;

// The three parameters of a tensor; nullopt when it names no region. Errors (INVALID_ARGUMENT,
// prefixed with `field`, e.g. "inputs[0].parameters"): a wrong type, a negative number, an offset or
// byte size without a region, a region without a byte size.
Result<std::optional<ShmRef>> shm_ref(const ProtoParameters& params, std::string_view field);
Result<std::optional<ShmRef>> shm_ref(const nlohmann::json* params, std::string_view field);

// The input's bytes when its parameters name a region, else nullopt. `has_data`: the request also
// carries the input's data (contents, raw_input_contents, "data"), which is an error with a region.
Result<std::optional<std::string>> shm_input_bytes(const ShmRequest* shm, const std::optional<ShmRef>& ref,
                                                   bool has_data, std::string_view field);

// Records `output` for its region when `ref` names one, and marks it written there: the region is
// registered, the window fits in it and holds the output's bytes for `images` images, and the
// output asks no classification.
Status add_shm_output(ShmRequest* shm, const std::optional<ShmRef>& ref, RequestedOutput& output,
                      const ModelSignature& model, size_t images, std::string_view field);

// Writes the FP32 rows of `scores` (every image's probabilities, in request order) into each output
// region of `shm`, before the response (which leaves those outputs' data out) is built.
Status write_shm_outputs(const ShmRequest& shm, const ImageScores& scores);

}  // namespace tessera::kserve
