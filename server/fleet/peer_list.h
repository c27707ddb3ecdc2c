// The other daemons a fleet view asks about: `--peers HOST:PORT,HOST:PORT` (their HTTP ports).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"

namespace tessera::fleet {

// One peer's HTTP address; `target` is how it was written ("board-3:8080", "[::1]:8080").
struct PeerAddress {
  std::string host;  // without brackets
  int port = 0;
  std::string target;
};

// "a:8080, b:8081" -> two peers; "" -> none. INVALID_ARGUMENT naming the bad entry for a missing
// or out-of-range port, an empty host, or a duplicate.
Result<std::vector<PeerAddress>> parse_peers(std::string_view text);

}  // namespace tessera::fleet
