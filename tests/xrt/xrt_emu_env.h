// For tests that run the xrt backend on the software-emulated XRT device (kernels/sw_emu/): the
// checks that this process really loaded the emulation (a test FAILS, never skips, when it did
// not) and its hooks (faults and the number of cards per test, per-CU run counts).
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::testing {

// The directory of the libxrt_coreutil this process loaded ("" when none).
inline std::filesystem::path loaded_xrt_coreutil_dir() {
  std::filesystem::path found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::filesystem::path path(info->dlpi_name == nullptr ? "" : info->dlpi_name);
        if (path.filename().string().rfind("libxrt_coreutil.so", 0) != 0) return 0;
        *static_cast<std::filesystem::path*>(out) = path.parent_path();
        return 1;
      },
      &found);
  return found;
}

// "" when the process runs on the emulated XRT library the build made (TESSERA_XRT_EMU_LIB_DIR,
// set by CTest), else why not.
inline std::string emulated_xrt_problem() {
  const char* expected = std::getenv("TESSERA_XRT_EMU_LIB_DIR");
  if (expected == nullptr) return "TESSERA_XRT_EMU_LIB_DIR is not set (run this test through ctest)";
  const std::filesystem::path loaded = loaded_xrt_coreutil_dir();
  std::error_code ec;
  if (loaded.empty() || !std::filesystem::equivalent(loaded, expected, ec)) {
    return "the process loaded libxrt_coreutil from '" + loaded.string() + "', not the emulation in " + expected +
           " (is LD_LIBRARY_PATH set?)";
  }
  if (dlsym(RTLD_DEFAULT, "tessera_xrt_emu_reset") == nullptr) return "libxrt_coreutil has no tessera_xrt_emu_reset";
  return "";
}

// "" when process `pid` (a tesserad this test started) mapped the emulated libxrt_coreutil, read
// from /proc/PID/maps, else why not.
inline std::string process_emulated_xrt_problem(pid_t pid) {
  const char* expected = std::getenv("TESSERA_XRT_EMU_LIB_DIR");
  if (expected == nullptr) return "TESSERA_XRT_EMU_LIB_DIR is not set (run this test through ctest)";
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line, loaded;
  while (std::getline(maps, line)) {
    const size_t at = line.find('/');
    if (at == std::string::npos) continue;
    const std::filesystem::path path = line.substr(at);
    if (path.filename().string().rfind("libxrt_coreutil.so", 0) != 0) continue;
    loaded = path.string();
    std::error_code ec;
    if (std::filesystem::equivalent(path.parent_path(), expected, ec)) return "";
  }
  return "process " + std::to_string(pid) + " mapped libxrt_coreutil '" + loaded + "', not the emulation in " +
         expected + " (is LD_LIBRARY_PATH set?)";
}

// Sets the emulation's environment (cards and faults) and makes it read it again.
inline int reset_emulated_xrt(const std::string& faults = "", unsigned cards = 1) {
  setenv("TESSERA_XRT_EMU_FAULTS", faults.c_str(), 1);
  setenv("TESSERA_XRT_EMU_DEVICES", std::to_string(cards).c_str(), 1);
  auto* reset = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "tessera_xrt_emu_reset"));
  return reset == nullptr ? -1 : reset();
}

// Completed runs of compute unit `instance` of card `card` (-1 when unknown).
inline long emulated_cu_runs(unsigned card, const std::string& instance) {
  auto* runs = reinterpret_cast<long (*)(unsigned, const char*)>(dlsym(RTLD_DEFAULT, "tessera_xrt_emu_cu_runs"));
  return runs == nullptr ? -1 : runs(card, instance.c_str());
}

}  // namespace tessera::testing
