#include "server/kserve/raw_contents.h"

#include <bit>

namespace tessera::kserve {
namespace {

uint32_t load_le32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}

void store_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

Result<std::vector<std::string_view>> split_raw_bytes(std::string_view raw, std::string_view field) {
  std::vector<std::string_view> elements;
  size_t pos = 0;
  while (pos < raw.size()) {
    const std::string prefix = std::string(field) + ": BYTES element " + std::to_string(elements.size());
    if (raw.size() - pos < 4) {
      return Status::invalid_argument(prefix + " has a " + std::to_string(raw.size() - pos) +
                                      "-byte length prefix; it must be 4 bytes (little-endian)");
    }
    const uint32_t length = load_le32(raw.data() + pos);
    pos += 4;
    if (length > raw.size() - pos) {
      return Status::invalid_argument(prefix + " declares " + std::to_string(length) + " bytes but " +
                                      std::to_string(raw.size() - pos) + " follow");
    }
    elements.push_back(raw.substr(pos, length));
    pos += length;
  }
  return elements;
}

void append_raw_bytes(std::string& out, std::string_view element) {
  store_le32(out, static_cast<uint32_t>(element.size()));
  out.append(element);
}

std::string raw_from_floats(std::span<const float> values) {
  std::string out;
  out.reserve(values.size() * 4);
  for (float v : values) store_le32(out, std::bit_cast<uint32_t>(v));
  return out;
}

std::vector<float> floats_from_raw(std::string_view raw) {
  std::vector<float> out(raw.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) out[i] = std::bit_cast<float>(load_le32(raw.data() + 4 * i));
  return out;
}

}  // namespace tessera::kserve
