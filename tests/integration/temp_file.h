// A file with the given text in the temporary directory, removed with the object.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace tessera::testing {

struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& text) {
    path = std::filesystem::temp_directory_path() /
           ("tessera-tokens-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
    std::ofstream(path) << text;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

}  // namespace tessera::testing
