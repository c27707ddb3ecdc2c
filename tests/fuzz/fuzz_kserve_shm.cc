// The system shared-memory extension's parsing of outside bytes: the first byte picks
//   0: a JSON infer body (decode_json) whose tensors may name regions,
//   1: a ModelInferRequest's wire bytes (decode_grpc) whose tensors may name regions,
//   2: the body of POST /v2/systemsharedmemory/region/r/register (shared_memory_http),
// the rest is the input. Decoding runs with a registry holding region "r": 4096 bytes of a
// shared-memory object the target creates at start and unlinks at once (its descriptor stays).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/decode_grpc.h"
#include "server/kserve/decode_json.h"
#include "server/kserve/shared_memory.h"
#include "server/kserve/shared_memory_params.h"
#include "server/routes/shared_memory_routes.h"
#include "tests/fuzz/kserve_fuzz_model.h"

namespace {

using tessera::kserve::SharedMemoryRegistry;

// The registry with region "r" over a fresh object (no region when /dev/shm is missing).
SharedMemoryRegistry& registry() {
  static SharedMemoryRegistry* shm = [] {
    auto* made = new SharedMemoryRegistry({true, 4, 1 << 20});
    const std::string key = "/tessera-fuzz-" + std::to_string(::getpid());
    const int fd = ::shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0 && ::ftruncate(fd, 4096) == 0) {
      (void)made->register_region({"r", key, 0, 4096});
    }
    if (fd >= 0) {
      ::shm_unlink(key.c_str());
      ::close(fd);
    }
    return made;
  }();
  return *shm;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const tessera::kserve::ModelSignature model = tessera::fuzz::fuzz_model_signature();
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  tessera::kserve::ShmRequest shm{&registry(), {}};
  switch (data[0] % 3) {
    case 0: (void)tessera::kserve::decode_infer_request_body(rest, model, {}, nullptr, std::nullopt, &shm); break;
    case 1: {
      inference::ModelInferRequest request;
      if (request.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) {
        (void)tessera::kserve::decode_infer_request(request, model, {}, &shm);
      }
      break;
    }
    default: {
      // A region the body registers is dropped again; "r" stays.
      (void)tessera::shared_memory_response(registry(), boost::beast::http::verb::post,
                                            "/v2/systemsharedmemory/region/x/register", rest);
      (void)registry().unregister("x");
    }
  }
  return 0;
}
