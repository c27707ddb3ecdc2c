// Request-target helpers: path/query split, percent-decoding, query parameters.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

struct RequestTarget {
  std::string_view path;   // before '?'
  std::string_view query;  // after '?', empty when none
};

RequestTarget split_target(std::string_view target);

// Decodes %XX escapes (and '+' as space when `plus_is_space`); nullopt for a malformed escape
// or a decoded NUL.
std::optional<std::string> percent_decode(std::string_view in, bool plus_is_space = false);

// "a=1&b=x%20y" -> {a: "1", b: "x y"}; the last of repeated keys wins. nullopt when malformed.
std::optional<std::map<std::string, std::string>> parse_query(std::string_view query);

}  // namespace tessera
