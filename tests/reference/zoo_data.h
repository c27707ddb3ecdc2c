// Reading the reference data tools/make_zoo.py writes (raw little-endian arrays, meta.json).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::testing {

inline const std::filesystem::path kZoo = TESSERA_ZOO_DIR;

// A whole raw array file; a test failure naming the file when it is missing.
template <class T>
std::vector<T> read_raw(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    ADD_FAILURE() << "missing " << path << " (made by tools/make_zoo.py, the make_zoo test)";
    return {};
  }
  std::vector<T> v(static_cast<size_t>(in.tellg()) / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  return v;
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "missing " << path;
    return {};
  }
  return nlohmann::json::parse(in);
}

}  // namespace tessera::testing
