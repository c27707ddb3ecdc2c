// tesserad's TOML config file (server/daemon/flags): the fuzz bytes are written as the file and
// applied to the daemon's settings table.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "server/daemon/flags.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tessera-fuzz-daemon-" + std::to_string(getpid()) + ".toml");
  {
    std::ofstream toml(file, std::ios::binary | std::ios::trunc);
    toml.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  tessera::DaemonOptions options;
  std::string log_level = "info";
  const auto flags = tessera::daemon_flags(options, log_level);
  (void)tessera::apply_config_file(file, flags);
  return 0;
}
