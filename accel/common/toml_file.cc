#include "accel/common/toml_file.h"

namespace tessera {

Result<toml::table> parse_toml_file(const std::filesystem::path& file) {
  try {
    return toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    return Status::invalid_argument(file.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                                    std::string(e.description()));
  }
}

}  // namespace tessera
