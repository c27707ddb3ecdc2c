#include "server/kserve/base64.h"

#include <array>

namespace tessera::kserve {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr int8_t kSkip = -2;
constexpr int8_t kBad = -1;

constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = kBad;
  for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  t['-'] = 62;  // URL-safe alphabet
  t['_'] = 63;
  for (char c : {' ', '\t', '\n', '\r', '\f', '\v'}) t[static_cast<uint8_t>(c)] = kSkip;
  return t;
}
constexpr std::array<int8_t, 256> kTable = make_table();

}  // namespace

Result<std::vector<uint8_t>> base64_decode(std::string_view text) {
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3 + 3);
  uint32_t acc = 0;
  int bits = 0;     // significant bits in acc
  int symbols = 0;  // data symbols read
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<uint8_t>(text[i]);
    const int8_t v = kTable[c];
    if (v == kSkip) continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (v == kBad || padding > 0) {
      return Status::invalid_argument(
          "not valid base64: " + std::string(padding > 0 ? "data after '=' padding" : "unexpected character") +
          " at offset " + std::to_string(i));
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    ++symbols;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  const int tail = symbols % 4;
  if (tail == 1) return Status::invalid_argument("not valid base64: truncated (length is 1 more than a multiple of 4)");
  if (padding > 0 && (padding > 2 || (tail == 0 ? 0 : 4 - tail) != static_cast<int>(padding))) {
    return Status::invalid_argument("not valid base64: wrong '=' padding");
  }
  return out;
}

std::string base64_encode(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(n >> shift) & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = uint32_t{bytes[i]} << 16;
    if (rest == 2) n |= uint32_t{bytes[i + 1]} << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace tessera::kserve
