// Reading a TOML file (model.toml, board profiles) into a toml++ table; a syntax error is
// INVALID_ARGUMENT naming the file and line.
#pragma once

#include <filesystem>

#include <toml++/toml.h>

#include "accel/common/status.h"

namespace tessera {

Result<toml::table> parse_toml_file(const std::filesystem::path& file);

}  // namespace tessera
