// Bearer tokens (--auth-tokens FILE): the set of accepted tokens and the one check both
// transports use. Only SHA-256 digests of the tokens are kept, and a presented token is compared
// against every digest in constant time, so neither timing nor a memory dump gives a token away.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "accel/common/status.h"

namespace tessera {

class BearerTokens {
 public:
  // One token per line; surrounding whitespace is trimmed, blank lines and lines starting with
  // '#' are ignored. An unreadable file, a token with inner whitespace or control characters, or
  // a file without any token is an error naming the file (and the line), never the token.
  static Result<BearerTokens> load(const std::filesystem::path& file);
  // For tests and embedding: the given tokens (none may be empty).
  static BearerTokens of(const std::vector<std::string_view>& tokens);

  // Whether `token` is one of the accepted tokens.
  bool accepts_token(std::string_view token) const;
  // Whether an Authorization header value is "Bearer <accepted token>" (scheme case-insensitive).
  bool accepts_header(std::string_view authorization) const;

  size_t size() const { return digests_.size(); }

 private:
  using Digest = std::array<uint8_t, 32>;
  static Digest digest(std::string_view token);

  std::vector<Digest> digests_;
};

// The token of an Authorization header value "Bearer <token>", or "" when it is not one.
std::string_view bearer_token_of(std::string_view authorization);

}  // namespace tessera
