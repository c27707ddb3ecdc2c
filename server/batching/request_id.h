// Request ids: the caller's when it sends a usable one, else made here.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

// A fresh id: 8 hex digits unique to this process run, a dash, a counter ("3f9a0c21-42").
std::string make_request_id();

// Caller ids go into logs and responses: 1..128 printable ASCII characters, no spaces.
bool is_valid_request_id(std::string_view id);

}  // namespace tessera
