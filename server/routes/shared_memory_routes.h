// The system shared-memory extension over HTTP, as Triton has it:
//   POST /v2/systemsharedmemory/region/{name}/register    {"key": "/shm", "offset": 0, "byte_size": N}
//   POST /v2/systemsharedmemory[/region/{name}]/unregister
//   GET  /v2/systemsharedmemory[/region/{name}]/status     [{"name", "key", "offset", "byte_size"}, ...]
// 200 with an empty body for register and unregister. Errors are {"error": "..."}: 400 for a bad
// body, a name registered twice, a bad key, a window past the object, the server's limits or the
// extension being off; 404 for the status of an unknown name or a path not above.
#pragma once

#include <string_view>

#include "server/http/types.h"
#include "server/kserve/shared_memory.h"

namespace tessera {

inline constexpr std::string_view kSharedMemoryPath = "/v2/systemsharedmemory";

// Answers a request whose path starts with kSharedMemoryPath.
HttpResponse shared_memory_response(kserve::SharedMemoryRegistry& shm, boost::beast::http::verb method,
                                    std::string_view path, std::string_view body);

}  // namespace tessera
