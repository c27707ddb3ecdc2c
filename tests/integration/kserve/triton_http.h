// HTTP inference requests laid out byte for byte as tritonclient.http sends them with its
// defaults (Triton's binary tensor data extension: the JSON header, whose length the
// Inference-Header-Content-Length header gives, then each binary input's bytes in input order),
// and the answer split the same way. Built by hand from the protocol document, not by the
// server's codec.
#pragma once

#include <nlohmann/json.hpp>

#include <bit>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/raw_connection.h"

namespace tessera::testing {

inline std::string le32(uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return out;
}

// FP32 elements, little-endian, as numpy's tobytes() gives them on x86 and ARM.
inline std::string le_floats(const std::vector<float>& values) {
  std::string out;
  for (float v : values) out += le32(std::bit_cast<uint32_t>(v));
  return out;
}

// A BYTES tensor: each element a 4-byte little-endian length and its bytes.
inline std::string length_prefixed(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& e : elements) out += le32(static_cast<uint32_t>(e.size())) + e;
  return out;
}

inline std::vector<float> floats_of(const std::string& raw) {
  std::vector<float> out;
  for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
    uint32_t bits = 0;
    for (size_t b = 0; b < 4; ++b) bits |= uint32_t{static_cast<uint8_t>(raw[i + b])} << (8 * b);
    out.push_back(std::bit_cast<float>(bits));
  }
  return out;
}

// Splits a BYTES tensor; an element cut short ends the list.
inline std::vector<std::string> strings_of(const std::string& raw) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos + 4 <= raw.size()) {
    uint32_t n = 0;
    for (size_t b = 0; b < 4; ++b) n |= uint32_t{static_cast<uint8_t>(raw[pos + b])} << (8 * b);
    pos += 4;
    if (n > raw.size() - pos) break;
    out.push_back(raw.substr(pos, n));
    pos += n;
  }
  return out;
}

struct TritonReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string json_text;                       // the JSON header
  std::string binary;                          // what follows it

  // The JSON header parsed (discarded when it is not JSON).
  nlohmann::json json() const { return nlohmann::json::parse(json_text, nullptr, false); }

  std::string header(const std::string& lower_name) const {
    const auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

// POST `target` with the JSON `header` and `binary` after it, the headers tritonclient.http sends
// (`header_length` overrides Inference-Header-Content-Length's value; "" leaves it out), on a
// fresh connection that asks to be closed after the answer.
inline TritonReply triton_post(int port, const std::string& target, const std::string& header,
                               const std::string& binary,
                               const std::optional<std::string>& header_length = std::nullopt) {
  const std::string length = header_length.value_or(std::to_string(header.size()));
  std::string request = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nUser-Agent: python/gevent-http-client-2.0.11\r\n";
  if (!length.empty()) request += "Inference-Header-Content-Length: " + length + "\r\n";
  request += "Content-Length: " + std::to_string(header.size() + binary.size()) + "\r\nConnection: close\r\n\r\n";
  request += header + binary;

  RawConnection connection(port);
  TritonReply reply;
  if (!connection.send(request)) return reply;
  const std::string raw = connection.read_until_closed(std::chrono::seconds(20));
  reply.status = http_status_of(raw);
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return reply;
  size_t line = raw.find("\r\n") + 2;
  while (line < head_end) {
    const size_t next = raw.find("\r\n", line);
    const std::string field = raw.substr(line, next - line);
    const size_t colon = field.find(':');
    std::string name = field.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[name] = field.substr(field.find_first_not_of(' ', colon + 1));
    line = next + 2;
  }
  std::string body = raw.substr(head_end + 4);
  size_t json_length = body.size();
  if (const auto it = reply.headers.find("inference-header-content-length"); it != reply.headers.end()) {
    json_length = std::min<size_t>(std::stoul(it->second), body.size());
  }
  reply.json_text = body.substr(0, json_length);
  reply.binary = body.substr(json_length);
  return reply;
}

}  // namespace tessera::testing
