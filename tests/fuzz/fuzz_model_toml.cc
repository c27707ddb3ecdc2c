// model.toml (accel/runtime/model_config): the fuzz bytes are written as a model folder's
// model.toml and loaded. The folder also holds a labels file, so the paths model.toml names
// may resolve.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "accel/runtime/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("tessera-fuzz-model-" + std::to_string(getpid()));
    std::filesystem::create_directories(d / "calibration");
    std::ofstream(d / "labels.txt") << "a\nb\nc\n";
    return d;
  }();
  {
    std::ofstream toml(dir / "model.toml", std::ios::binary | std::ios::trunc);
    toml.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  (void)tessera::load_model_config(dir);
  return 0;
}
