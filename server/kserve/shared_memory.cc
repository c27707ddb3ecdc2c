#include "server/kserve/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace tessera::kserve {
namespace {

constexpr size_t kMaxKeyLength = 255;  // NAME_MAX: the name below /dev/shm, with its "/"

// 's' (appended, not "'" + s: GCC 12 reports a false -Wrestrict on that when inlined). Not named
// `quoted`: on a std::string, argument-dependent lookup also finds std::quoted wherever <iomanip> is
// visible (the precompiled headers, cmake/tessera_pch.cmake), and picks it.
std::string in_quotes(std::string_view s) {
  std::string out(1, '\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

// The object's current size in bytes.
Result<uint64_t> object_size(int fd, std::string_view key) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status::internal("shared memory " + in_quotes(key) + ": fstat failed: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode) || st.st_size < 0) {
    return Status::invalid_argument("shared memory " + in_quotes(key) + " is not a shared-memory object");
  }
  return static_cast<uint64_t>(st.st_size);
}

// a + b <= limit without overflow.
bool fits(uint64_t a, uint64_t b, uint64_t limit) { return a <= limit && b <= limit - a; }

}  // namespace

Status check_shm_key(std::string_view key) {
  const std::string why = "shared memory key " + in_quotes(key) + ": ";
  if (key.size() < 2 || key[0] != '/') {
    return Status::invalid_argument(why + "must be a shared-memory name, '/' then the name (as shm_open takes it)");
  }
  if (key.size() > kMaxKeyLength) {
    return Status::invalid_argument(why + "longer than " + std::to_string(kMaxKeyLength) + " characters");
  }
  const std::string_view rest = key.substr(1);
  if (rest.find('/') != std::string_view::npos || rest.find('\0') != std::string_view::npos) {
    return Status::invalid_argument(why + "a shared-memory name has no '/' after the first; it is no path");
  }
  if (rest == "." || rest == "..") return Status::invalid_argument(why + "is no shared-memory name");
  return Status::ok();
}

Result<std::shared_ptr<const SharedMemoryRegion>> SharedMemoryRegion::open(const RegionStatus& status) {
  TESSERA_RETURN_IF_ERROR(check_shm_key(status.key));
  if (status.byte_size == 0) {
    return Status::invalid_argument("failed to register shared memory region " + in_quotes(status.name) +
                                    ": byte_size is 0");
  }
  const int fd = ::shm_open(status.key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return Status::invalid_argument("Unable to open shared memory region: " + in_quotes(status.key) + " (" +
                                    std::strerror(errno) + ")");
  }
  std::shared_ptr<const SharedMemoryRegion> region(new SharedMemoryRegion(status, fd));
  auto size = object_size(fd, status.key);
  if (!size) return size.status();
  if (!fits(status.offset, status.byte_size, *size)) {
    return Status::invalid_argument("failed to register shared memory region " + in_quotes(status.name) + ": offset " +
                                    std::to_string(status.offset) + " + byte_size " + std::to_string(status.byte_size) +
                                    " is past the end of " + in_quotes(status.key) + " (" + std::to_string(*size) +
                                    " bytes)");
  }
  return region;
}

SharedMemoryRegion::~SharedMemoryRegion() { ::close(fd_); }

Status SharedMemoryRegion::check_range(uint64_t offset, uint64_t size) const {
  if (!fits(offset, size, status_.byte_size)) {
    return Status::invalid_argument("shared memory region " + in_quotes(status_.name) + ": offset " +
                                    std::to_string(offset) + " + byte size " + std::to_string(size) +
                                    " is past the region's " + std::to_string(status_.byte_size) + " bytes");
  }
  TESSERA_ASSIGN_OR_RETURN(const uint64_t object, object_size(fd_, status_.key));
  if (!fits(status_.offset + offset, size, object)) {
    return Status::invalid_argument("shared memory region " + in_quotes(status_.name) + ": its object " +
                                    in_quotes(status_.key) + " was truncated to " + std::to_string(object) +
                                    " bytes since it was registered");
  }
  return Status::ok();
}

Result<std::string> SharedMemoryRegion::read(uint64_t offset, uint64_t size) const {
  TESSERA_RETURN_IF_ERROR(check_range(offset, size));
  std::string out(size, '\0');
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, out.data() + done, size - done, static_cast<off_t>(status_.offset + offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status::invalid_argument("shared memory region " + in_quotes(status_.name) + ": read " +
                                      std::to_string(done) + " of " + std::to_string(size) + " bytes" +
                                      (n < 0 ? std::string(": ") + std::strerror(errno) : " (object truncated)"));
    }
    done += static_cast<size_t>(n);
  }
  return out;
}

Status SharedMemoryRegion::write(uint64_t offset, std::string_view bytes) const {
  TESSERA_RETURN_IF_ERROR(check_range(offset, bytes.size()));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(status_.offset + offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status::internal("shared memory region " + in_quotes(status_.name) +
                              ": write failed: " + (n < 0 ? std::strerror(errno) : "no progress"));
    }
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

Status SharedMemoryRegistry::check_allowed() const {
  if (limits_.allowed) return Status::ok();
  return Status::failed_precondition(
      "system shared memory is off in this server; start tesserad with --allow-client-shm true to use it");
}

Status SharedMemoryRegistry::register_region(const RegionStatus& region) {
  TESSERA_RETURN_IF_ERROR(check_allowed());
  if (region.name.empty()) return Status::invalid_argument("shared memory region name is empty");
  {
    const std::lock_guard lock(mu_);
    if (regions_.count(region.name) > 0) {
      return {StatusCode::kAlreadyExists, "shared memory region " + in_quotes(region.name) + " already in manager"};
    }
    if (regions_.size() >= limits_.max_regions) {
      return Status::resource_exhausted("shared memory: " + std::to_string(regions_.size()) +
                                        " regions registered, the server's limit (--shm-max-regions)");
    }
    if (!fits(registered_bytes_, region.byte_size, limits_.max_bytes)) {
      return Status::resource_exhausted("shared memory: registering " + std::to_string(region.byte_size) +
                                        " more bytes would pass the server's limit of " +
                                        std::to_string(limits_.max_bytes) + " (--shm-max-mb)");
    }
  }
  // Opened without the lock (a slow file system must not stall the data path); checked again.
  TESSERA_ASSIGN_OR_RETURN(auto opened, SharedMemoryRegion::open(region));
  const std::lock_guard lock(mu_);
  if (regions_.count(region.name) > 0) {
    return {StatusCode::kAlreadyExists, "shared memory region " + in_quotes(region.name) + " already in manager"};
  }
  if (regions_.size() >= limits_.max_regions || !fits(registered_bytes_, region.byte_size, limits_.max_bytes)) {
    return Status::resource_exhausted("shared memory: the server's limits (--shm-max-regions, --shm-max-mb) are met");
  }
  registered_bytes_ += region.byte_size;
  regions_.emplace(region.name, std::move(opened));
  return Status::ok();
}

Status SharedMemoryRegistry::unregister(std::string_view name) {
  TESSERA_RETURN_IF_ERROR(check_allowed());
  std::map<std::string, std::shared_ptr<const SharedMemoryRegion>, std::less<>> dropped;
  const std::lock_guard lock(mu_);
  if (name.empty()) {
    dropped.swap(regions_);
    registered_bytes_ = 0;
    return Status::ok();
  }
  const auto it = regions_.find(name);
  if (it == regions_.end()) return Status::ok();
  registered_bytes_ -= it->second->status().byte_size;
  regions_.erase(it);
  return Status::ok();
}

Result<std::vector<RegionStatus>> SharedMemoryRegistry::status(std::string_view name) const {
  TESSERA_RETURN_IF_ERROR(check_allowed());
  const std::lock_guard lock(mu_);
  std::vector<RegionStatus> out;
  if (name.empty()) {
    for (const auto& [_, region] : regions_) out.push_back(region->status());
    return out;
  }
  const auto it = regions_.find(name);
  if (it == regions_.end()) {
    return Status::not_found("Unable to find system shared memory region: " + in_quotes(name));
  }
  out.push_back(it->second->status());
  return out;
}

Result<std::shared_ptr<const SharedMemoryRegion>> SharedMemoryRegistry::find(std::string_view name) const {
  TESSERA_RETURN_IF_ERROR(check_allowed());
  const std::lock_guard lock(mu_);
  const auto it = regions_.find(name);
  if (it == regions_.end()) {
    return Status::invalid_argument("Unable to find shared memory region: " + in_quotes(name) + "; register it first");
  }
  return it->second;
}

}  // namespace tessera::kserve
