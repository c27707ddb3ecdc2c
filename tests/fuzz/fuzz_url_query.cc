// Request-target parsing (server/http/url): path/query split, percent-decoding, query parameters.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/http/url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view target(reinterpret_cast<const char*>(data), size);
  const tessera::RequestTarget split = tessera::split_target(target);
  if (split.path.size() + split.query.size() > target.size()) __builtin_trap();
  (void)tessera::percent_decode(split.path);
  (void)tessera::percent_decode(split.query, true);
  auto params = tessera::parse_query(split.query);
  if (params) {
    for (const auto& [key, value] : *params) {
      if (key.find('\0') != std::string_view::npos || value.find('\0') != std::string_view::npos) __builtin_trap();
    }
  }
  return 0;
}
