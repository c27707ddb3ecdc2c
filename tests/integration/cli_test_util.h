// Shared by the CLI tests: running `tessera`, scratch folders of images, JSON lines.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/fmnist_images.h"
#include "tests/integration/subprocess.h"

namespace tessera::testing {

inline ProcessOutput run_tessera(std::vector<std::string> args, milliseconds timeout = milliseconds(60000)) {
  args.insert(args.begin(), TESSERA_CLI_PATH);
  return run_process(args, timeout);
}

// A folder under /tmp removed with its contents at the end of the scope.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("tessera-" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return path / name;
  }
};

// The non-empty lines of `text`, each parsed as JSON (a parse failure fails the test).
inline std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << line << " (" << e.what() << ")";
    }
  }
  return out;
}

// Bytes that are neither JPEG nor PNG.
inline std::string not_an_image() { return std::string(512, '\x5a') + "definitely not an image"; }

}  // namespace tessera::testing
