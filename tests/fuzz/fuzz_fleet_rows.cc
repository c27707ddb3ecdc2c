// The fleet view's reading of a peer's answers (server/fleet/fleet_rows): what a --peers daemon's
// /v1/telemetry and /v2/health/ready answered, built into its row of GET /v1/fleet and written
// as the endpoint writes it. The input is [status byte][telemetry body]\0[readiness body]; the
// status byte picks each answer's HTTP status (200 mostly, so the bodies are read).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/fleet/fleet_rows.h"
#include "server/http/responses.h"

namespace {

// An HTTP status a peer may answer with, from two bits.
int status_of(uint8_t bits) {
  static constexpr int kStatuses[] = {200, 200, 400, 401};
  return kStatuses[bits & 3];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t split = rest.find('\0');
  tessera::fleet::ProbeReply telemetry, ready;
  telemetry.status = status_of(data[0]);
  ready.status = status_of(data[0] >> 2);
  telemetry.body = std::string(rest.substr(0, split));
  if (split != std::string_view::npos) ready.body = std::string(rest.substr(split + 1));
  bool bad_answer = false;
  const nlohmann::json row = tessera::fleet::peer_row("127.0.0.1:1", telemetry, ready, &bad_answer);
  (void)tessera::make_json_response(200, {{"rows", {row}}});
  return 0;
}
