// Triton's system shared-memory extension (docs/protocol/extension_shared_memory.md): the regions a
// client registered, by name. A region is [offset, offset + byte_size) of a POSIX shared-memory
// object the client created (shm_open key "/name"); inputs are read from it and outputs written
// into it (shared_memory_params.h) instead of travelling in the request and the response.
//
// A region keeps the object's descriptor open and is read and written with pread/pwrite, not
// mapped: a client may ftruncate its object smaller at any time, and a mapped page past the new
// end would raise SIGBUS in the daemon; pread past the end returns short and the request gets a
// clear error. Each access checks the object's size first (fstat); a write racing a truncation
// can only extend the client's object again.
// Unregistering drops the registry's reference only: a request that holds the region
// (std::shared_ptr) finishes with it, and the descriptor closes with the last holder.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "accel/common/status.h"

namespace tessera::kserve {

// Whether clients may use shared memory at all (--allow-client-shm, off by default: a client then
// reads and writes shared-memory objects with the daemon's rights), and how much they may register
// at once (--shm-max-regions, --shm-max-mb). Off, every call answers FAILED_PRECONDITION [400].
struct SharedMemoryLimits {
  bool allowed = false;
  size_t max_regions = 64;
  uint64_t max_bytes = uint64_t{1} << 30;
};

// One region as the status calls list it.
struct RegionStatus {
  std::string name;
  std::string key;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// A registered region: the open shared-memory object and the window the client named. Offsets
// given to read/write are within the window.
class SharedMemoryRegion {
 public:
  // Opens `key` read-write and checks [offset, offset + byte_size) lies within the object.
  static Result<std::shared_ptr<const SharedMemoryRegion>> open(const RegionStatus& status);
  ~SharedMemoryRegion();
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  const RegionStatus& status() const { return status_; }

  // `size` bytes at `offset` of the window; INVALID_ARGUMENT when past the window or the object
  // (truncated since it was registered).
  Result<std::string> read(uint64_t offset, uint64_t size) const;
  // Writes `bytes` at `offset` of the window, under the same checks.
  Status write(uint64_t offset, std::string_view bytes) const;

 private:
  SharedMemoryRegion(RegionStatus status, int fd) : status_(std::move(status)), fd_(fd) {}
  // The object still holds window bytes [offset, offset + size), and the window does.
  Status check_range(uint64_t offset, uint64_t size) const;

  const RegionStatus status_;
  const int fd_;
};

// The regions by name; thread-safe. Errors as Triton's (gRPC code; HTTP status in brackets):
// a name registered twice ALREADY_EXISTS [400], a key that is no shm name or no object, or a window
// past the object INVALID_ARGUMENT [400], status of an unknown name NOT_FOUND [404], past the
// limits RESOURCE_EXHAUSTED [503]. Unregistering an unknown name is OK (Triton's too).
class SharedMemoryRegistry {
 public:
  explicit SharedMemoryRegistry(SharedMemoryLimits limits) : limits_(limits) {}

  bool allowed() const { return limits_.allowed; }
  Status register_region(const RegionStatus& region);
  // "" = every region.
  Status unregister(std::string_view name);
  // "" = every region, by name.
  Result<std::vector<RegionStatus>> status(std::string_view name) const;
  // The region an input or output names; INVALID_ARGUMENT when none (the request is at fault).
  Result<std::shared_ptr<const SharedMemoryRegion>> find(std::string_view name) const;

 private:
  Status check_allowed() const;

  const SharedMemoryLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const SharedMemoryRegion>, std::less<>> regions_;
  uint64_t registered_bytes_ = 0;
};

// A key is a shm name: "/" then 1..254 characters, none of them "/" nor NUL, and not "." or "..".
Status check_shm_key(std::string_view key);

}  // namespace tessera::kserve
