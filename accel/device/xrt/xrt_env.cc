#include "accel/device/xrt/xrt_env.h"

#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>

namespace tessera {
namespace {

namespace fs = std::filesystem;

// XRT's device shim, which libxrt_coreutil dlopen()s from $XILINX_XRT/lib.
constexpr const char* kShimName = "libxrt_core.so.2";

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// Path of the loaded libxrt_coreutil, if the process has one (dl_iterate_phdr sees every object).
fs::path loaded_coreutil() {
  fs::path found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const char* name = info->dlpi_name;
        if (name == nullptr || name[0] == '\0') return 0;
        const fs::path path(name);
        if (path.filename().string().rfind("libxrt_coreutil.so", 0) != 0) return 0;
        *static_cast<fs::path*>(out) = path;
        return 1;
      },
      &found);
  return found;
}

bool holds_xrt(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kShimName, ec) &&
         (fs::exists(dir / "libxrt_coreutil.so.2", ec) || fs::exists(dir / "libxrt_coreutil.so", ec));
}

// The readlink() text of `link`, or "" when it is not a symlink.
std::string read_link(const fs::path& link) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(link, ec);
  return ec ? std::string() : target.string();
}

}  // namespace

Result<fs::path> xrt_library_dir() {
  std::error_code ec;
  const fs::path coreutil = loaded_coreutil();
  if (!coreutil.empty()) {
    fs::path dir = fs::weakly_canonical(coreutil.parent_path(), ec);
    if (ec) dir = coreutil.parent_path();
    if (holds_xrt(dir)) return dir;
    return Status::failed_precondition("XRT: " + coreutil.string() + " is loaded but " + (dir / kShimName).string() +
                                       " is missing (install libxrt1)");
  }
  // Not linked dynamically: Debian's multiarch directories of the boards Tessera targets.
  static constexpr std::array<const char*, 4> kCandidates = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                                             "/usr/lib/arm-linux-gnueabihf", "/usr/lib64"};
  for (const char* candidate : kCandidates) {
    if (holds_xrt(candidate)) return fs::path(candidate);
  }
  return Status::failed_precondition(std::string("XRT libraries not found (no ") + kShimName +
                                     " next to libxrt_coreutil; install libxrt1 or set XILINX_XRT)");
}

Result<fs::path> make_xrt_prefix(const fs::path& parent, const fs::path& lib_dir) {
  const fs::path prefix = parent / ("tessera-xrt-" + std::to_string(geteuid()));
  if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::failed_precondition("XILINX_XRT prefix: cannot create " + prefix.string() + ": " +
                                       errno_text(errno));
  }
  // The link below decides which libraries XRT dlopen()s: the prefix must be our own private
  // directory, not something another user planted in /tmp.
  struct stat st {};
  if (lstat(prefix.c_str(), &st) != 0) {
    return Status::failed_precondition("XILINX_XRT prefix: " + prefix.string() + ": " + errno_text(errno));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status::failed_precondition("XILINX_XRT prefix: " + prefix.string() +
                                       " is not a directory owned by this user and writable only by it");
  }
  const fs::path link = prefix / "lib";
  if (read_link(link) == lib_dir.string()) return prefix;
  // Make the link under a unique name, then rename it over `lib`: atomic, so a concurrent caller
  // sees either no link, the old one or a complete new one.
  static std::atomic<unsigned> counter{0};
  const fs::path temp = prefix / ("lib.tmp." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1)));
  unlink(temp.c_str());
  if (symlink(lib_dir.c_str(), temp.c_str()) != 0) {
    return Status::failed_precondition("XILINX_XRT prefix: symlink " + temp.string() + ": " + errno_text(errno));
  }
  if (rename(temp.c_str(), link.c_str()) != 0) {
    const int err = errno;
    unlink(temp.c_str());
    return Status::failed_precondition("XILINX_XRT prefix: cannot replace " + link.string() + ": " + errno_text(err));
  }
  return prefix;
}

Status ensure_xilinx_xrt_env() {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  const char* current = std::getenv("XILINX_XRT");
  if (current != nullptr && current[0] != '\0') return Status::ok();

  TESSERA_ASSIGN_OR_RETURN(const fs::path lib_dir, xrt_library_dir());
  // $XDG_RUNTIME_DIR is per-user and private; /tmp is the fallback (checked by make_xrt_prefix).
  fs::path parent = "/tmp";
  std::error_code ec;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR");
      runtime != nullptr && runtime[0] == '/' && fs::is_directory(runtime, ec) && access(runtime, W_OK) == 0) {
    parent = runtime;
  }
  TESSERA_ASSIGN_OR_RETURN(const fs::path prefix, make_xrt_prefix(parent, lib_dir));
  if (setenv("XILINX_XRT", prefix.c_str(), 1) != 0) {
    return Status::internal("setenv(XILINX_XRT): " + errno_text(errno));
  }
  return Status::ok();
}

}  // namespace tessera
