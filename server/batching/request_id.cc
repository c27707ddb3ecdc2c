#include "server/batching/request_id.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>

namespace tessera {

std::string make_request_id() {
  static const uint32_t run_id = std::random_device{}();
  static std::atomic<uint64_t> counter{0};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%08x-%llu", run_id, static_cast<unsigned long long>(counter.fetch_add(1)) + 1);
  return buf;
}

bool is_valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

}  // namespace tessera
