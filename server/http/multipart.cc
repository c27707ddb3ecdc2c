#include "server/http/multipart.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

namespace tessera {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of parameter `name` in a header value "type; a=1; b=\"x y\"" (case-insensitive
// name, quotes removed); nullopt when absent.
std::optional<std::string> header_parameter(std::string_view value, std::string_view name) {
  size_t pos = value.find(';');
  while (pos != std::string_view::npos) {
    std::string_view rest = value.substr(pos + 1);
    size_t end = 0;
    const size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string key = lower(trim(rest.substr(0, eq)));
    std::string_view v = rest.substr(eq + 1);
    std::string parsed;
    v = trim(v);
    if (!v.empty() && v.front() == '"') {
      const size_t close = v.find('"', 1);
      if (close == std::string_view::npos) return std::nullopt;
      parsed = std::string(v.substr(1, close - 1));
      end = static_cast<size_t>(v.data() + close + 1 - value.data());
    } else {
      const size_t semi = v.find(';');
      parsed = std::string(trim(v.substr(0, semi)));
      end = semi == std::string_view::npos ? value.size() : static_cast<size_t>(v.data() + semi - value.data());
    }
    if (key == name) return parsed;
    pos = value.find(';', end);
  }
  return std::nullopt;
}

}  // namespace

bool is_multipart_form(std::string_view content_type) {
  return lower(trim(content_type.substr(0, content_type.find(';')))) == "multipart/form-data";
}

Result<std::string_view> multipart_file(std::string_view content_type, std::string_view body, std::string_view field) {
  const auto boundary = header_parameter(content_type, "boundary");
  if (!boundary || boundary->empty() || boundary->size() > 70) {
    return Status::invalid_argument("multipart/form-data without a valid boundary parameter");
  }
  const std::string delimiter = "--" + *boundary;
  size_t pos = body.find(delimiter);
  if (pos == std::string_view::npos) return Status::invalid_argument("multipart body without its boundary");
  std::optional<std::string_view> first_file;
  for (;;) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") break;  // the closing delimiter
    if (body.substr(pos, 2) != "\r\n") return Status::invalid_argument("malformed multipart delimiter line");
    pos += 2;
    const size_t headers_end = body.find("\r\n\r\n", pos);
    if (headers_end == std::string_view::npos) return Status::invalid_argument("multipart part without a header end");
    const std::string_view headers = body.substr(pos, headers_end - pos);
    const size_t content_start = headers_end + 4;
    const size_t next = body.find("\r\n" + delimiter, content_start);
    if (next == std::string_view::npos) return Status::invalid_argument("multipart body without a closing delimiter");
    const std::string_view content = body.substr(content_start, next - content_start);

    std::optional<std::string> name, filename;
    size_t line_start = 0;
    while (line_start <= headers.size()) {
      size_t line_end = headers.find("\r\n", line_start);
      if (line_end == std::string_view::npos) line_end = headers.size();
      const std::string_view line = headers.substr(line_start, line_end - line_start);
      const size_t colon = line.find(':');
      if (colon != std::string_view::npos && lower(trim(line.substr(0, colon))) == "content-disposition") {
        const std::string_view value = line.substr(colon + 1);
        name = header_parameter(value, "name");
        filename = header_parameter(value, "filename");
      }
      line_start = line_end + 2;
    }
    if (name && *name == field) return content;
    if (filename && !first_file) first_file = content;
    pos = next + 2;
  }
  if (first_file) return *first_file;
  return Status::invalid_argument("the multipart form has no '" + std::string(field) + "' field and no file");
}

}  // namespace tessera
