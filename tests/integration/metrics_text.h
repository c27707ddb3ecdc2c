// Reading Prometheus text exposition in the integration tests.
#pragma once

#include <optional>
#include <sstream>
#include <string>

namespace tessera {

// The value of the sample line `name` exactly (labels included, sorted by name as prometheus-cpp
// writes them), or nullopt.
inline std::optional<double> sample_value(const std::string& exposition, const std::string& name) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return std::nullopt;
}

}  // namespace tessera
