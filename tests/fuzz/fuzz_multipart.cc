// The multipart/form-data parser of POST /v1/classify (server/http/multipart). The input is the
// Content-Type header's value, a newline, then the body.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/http/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view content_type = input.substr(0, newline);
  const std::string_view body = newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  (void)tessera::is_multipart_form(content_type);
  auto part = tessera::multipart_file(content_type, body);
  if (part.is_ok()) {
    // The part is a view into the body.
    const std::string_view file = part.value();
    if (!file.empty() && (file.data() < body.data() || file.data() + file.size() > body.data() + body.size())) {
      __builtin_trap();
    }
  }
  (void)tessera::multipart_file(content_type, body, "file");
  return 0;
}
