#include "server/auth/bearer_tokens.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera {
namespace {

constexpr std::string_view kSpace = " \t\r\n\f\v";

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

bool is_token_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u != 0x7f;
}

}  // namespace

BearerTokens::Digest BearerTokens::digest(std::string_view token) {
  Digest out{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), out.data());
  return out;
}

Result<BearerTokens> BearerTokens::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return Status::invalid_argument("cannot read the auth tokens file " + file.string() + ": " + std::strerror(errno));
  }
  BearerTokens tokens;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string_view token = trim(line);
    if (token.empty() || token.front() == '#') continue;
    for (const char c : token) {
      if (!is_token_char(c)) {
        return Status::invalid_argument("the auth tokens file " + file.string() + ", line " + std::to_string(number) +
                                        ": a token may not contain spaces or control characters");
      }
    }
    tokens.digests_.push_back(digest(token));
  }
  if (in.bad()) return Status::invalid_argument("cannot read the auth tokens file " + file.string());
  if (tokens.digests_.empty()) {
    return Status::invalid_argument("the auth tokens file " + file.string() +
                                    " has no tokens (one per line; blank lines and # comments are ignored)");
  }
  return tokens;
}

BearerTokens BearerTokens::of(const std::vector<std::string_view>& tokens) {
  BearerTokens out;
  for (std::string_view t : tokens) {
    if (!t.empty()) out.digests_.push_back(digest(t));
  }
  return out;
}

bool BearerTokens::accepts_token(std::string_view token) const {
  if (token.empty()) return false;
  const Digest presented = digest(token);
  // Every digest is compared, whatever matched before: the time taken says nothing.
  int matched = 0;
  for (const Digest& d : digests_) matched |= CRYPTO_memcmp(presented.data(), d.data(), d.size()) == 0 ? 1 : 0;
  return matched != 0;
}

bool BearerTokens::accepts_header(std::string_view authorization) const {
  return accepts_token(bearer_token_of(authorization));
}

std::string_view bearer_token_of(std::string_view authorization) {
  const std::string_view value = trim(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() || (value[kScheme.size()] != ' ' && value[kScheme.size()] != '\t')) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return {};
  }
  return trim(value.substr(kScheme.size()));
}

}  // namespace tessera
