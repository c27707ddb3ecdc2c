// The "raw" tensor layout of raw_input_contents / raw_output_contents: elements flattened
// row-major, little-endian, no padding; a BYTES element is a 4-byte little-endian length and
// then that many bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"

namespace tessera::kserve {

// Splits a raw BYTES tensor into its elements (views into `raw`). INVALID_ARGUMENT, prefixed
// with `field`, when a length prefix is cut short or runs past the end.
Result<std::vector<std::string_view>> split_raw_bytes(std::string_view raw, std::string_view field);

// Appends one BYTES element (length prefix + bytes) to `out`.
void append_raw_bytes(std::string& out, std::string_view element);

// FP32 elements as little-endian bytes, and back (raw.size() must be a multiple of 4).
std::string raw_from_floats(std::span<const float> values);
std::vector<float> floats_from_raw(std::string_view raw);

}  // namespace tessera::kserve
