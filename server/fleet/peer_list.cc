#include "server/fleet/peer_list.h"

#include <algorithm>
#include <charconv>

namespace tessera::fleet {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Result<PeerAddress> parse_peer(std::string_view entry) {
  auto bad = [&](const std::string& why) {
    return Status::invalid_argument("peer '" + std::string(entry) + "': " + why + " (want HOST:PORT)");
  };
  const size_t colon = entry.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = entry.substr(0, colon);
  const std::string_view port_text = entry.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address needs brackets");
  }
  if (host.empty()) return bad("no host");
  if (host.find_first_of(" /?#@") != std::string_view::npos) return bad("not a host name");
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 || port > 65535) {
    return bad("the port must be 1..65535");
  }
  PeerAddress peer;
  peer.host = std::string(host);
  peer.port = port;
  peer.target = std::string(entry);
  return peer;
}

}  // namespace

Result<std::vector<PeerAddress>> parse_peers(std::string_view text) {
  std::vector<PeerAddress> peers;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (entry.empty()) continue;
    TESSERA_ASSIGN_OR_RETURN(PeerAddress peer, parse_peer(entry));
    const bool seen = std::any_of(peers.begin(), peers.end(),
                                  [&](const PeerAddress& p) { return p.host == peer.host && p.port == peer.port; });
    if (seen) return Status::invalid_argument("peer '" + peer.target + "' is listed twice");
    peers.push_back(std::move(peer));
  }
  return peers;
}

}  // namespace tessera::fleet
