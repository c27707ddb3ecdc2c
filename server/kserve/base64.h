// Base64 (RFC 4648) for BYTES elements carried as JSON strings.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"

namespace tessera::kserve {

// Decodes the standard or the URL-safe alphabet; padding is optional, ASCII whitespace is
// skipped. INVALID_ARGUMENT naming the first bad character's offset, or a truncated final group.
Result<std::vector<uint8_t>> base64_decode(std::string_view text);

// Standard alphabet, padded.
std::string base64_encode(std::span<const uint8_t> bytes);

}  // namespace tessera::kserve
