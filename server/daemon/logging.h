// tesserad's logger: spdlog to stderr, as text lines or as JSON objects (one per line, for log
// shippers), at a given level.
#pragma once

#include <string>

#include "accel/common/status.h"

namespace tessera {

// format: "text" | "json"; level: spdlog's names (trace ... off).
Status configure_logging(const std::string& level, const std::string& format);

// `text` as the inside of a JSON string (quotes, backslashes and control characters escaped).
std::string json_escape(const std::string& text);

}  // namespace tessera
