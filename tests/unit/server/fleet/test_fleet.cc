// The fleet view's parts that need no daemon: --peers parsing, the rows built from a peer's
// answers (reachable or not, ready or draining, with or without a token), and the p99 figure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/daemon/flags.h"
#include "server/fleet/fleet_rows.h"
#include "server/fleet/peer_list.h"

namespace tessera::fleet {
namespace {

using nlohmann::json;

ProbeReply answer(int status, std::string body) {
  ProbeReply r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

ProbeReply no_answer(std::string error) {
  ProbeReply r;
  r.error = std::move(error);
  return r;
}

// A telemetry JSON as /v1/telemetry writes it (the fields the rows read).
json telemetry_json() {
  return json::parse(R"({
    "device_kind": "emu", "board": "zcu102", "power_watts": 3.25, "temperature_c": null,
    "images_per_second": 12.5, "queue_depth": 3,
    "models": [
      {"name": "a", "latency": [{"stage": "queue", "p99_us": 900000, "count": 4},
                                {"stage": "total", "p99_us": 1500, "count": 4}]},
      {"name": "b", "latency": [{"stage": "total", "p99_us": 2500, "count": 2}]},
      {"name": "idle", "latency": [{"stage": "total", "p99_us": 0, "count": 0}]}
    ]})");
}

TEST(FleetPeers, ParsesHostPortListsWithSpacesAndIpv6) {
  auto peers = parse_peers(" board-1:8080, 10.0.0.7:9000 ,[::1]:8081,");
  ASSERT_TRUE(peers.is_ok()) << peers.status().to_string();
  ASSERT_EQ(peers->size(), 3u);
  EXPECT_EQ((*peers)[0].host, "board-1");
  EXPECT_EQ((*peers)[0].port, 8080);
  EXPECT_EQ((*peers)[0].target, "board-1:8080");
  EXPECT_EQ((*peers)[1].host, "10.0.0.7");
  EXPECT_EQ((*peers)[1].port, 9000);
  EXPECT_EQ((*peers)[2].host, "::1");
  EXPECT_EQ((*peers)[2].target, "[::1]:8081");
  auto none = parse_peers("");
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none->empty());
}

TEST(FleetPeers, RejectsBadEntriesNamingThem) {
  for (const char* bad : {"board", "board:", ":8080", "board:0", "board:65536", "board:80x", "::1:8080",
                          "http://board:8080", "a:1,a:1"}) {
    auto peers = parse_peers(bad);
    ASSERT_FALSE(peers.is_ok()) << bad;
    EXPECT_EQ(peers.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(peers.status().message().find("peer '"), std::string::npos) << peers.status().message();
  }
}

TEST(FleetPeers, ConfigFileKeysAndFlagsSetThePeers) {
  const auto file = std::filesystem::temp_directory_path() / ("tessera-fleet-" + std::to_string(getpid()) + ".toml");
  std::ofstream(file) << "peers = \"a:8080,b:8081\"\npeer-timeout-ms = 250\n";
  DaemonOptions options;
  std::string log_level;
  const auto flags = daemon_flags(options, log_level);
  const Status s = apply_config_file(file, flags);
  std::filesystem::remove(file);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(options.peers, "a:8080,b:8081");
  EXPECT_EQ(options.peer_timeout_ms, 250);
}

TEST(FleetRows, WorstP99IsTheSlowestModelsTotalStage) {
  EXPECT_EQ(worst_p99_us(telemetry_json()), json(2500));
  EXPECT_TRUE(worst_p99_us(json::parse(R"({"models": []})")).is_null());
  EXPECT_TRUE(worst_p99_us(json::parse(R"({"models": [{"name": "x", "latency": "junk"}]})")).is_null());
}

TEST(FleetRows, AnsweringReadyPeerHasItsFigures) {
  const json row = peer_row("b:1", answer(200, telemetry_json().dump()), answer(200, R"({"ready": true})"));
  EXPECT_EQ(row["target"], "b:1");
  EXPECT_EQ(row["self"], false);
  EXPECT_EQ(row["reachable"], true);
  EXPECT_EQ(row["ready"], true);
  EXPECT_EQ(row["device_kind"], "emu");
  EXPECT_EQ(row["board"], "zcu102");
  EXPECT_EQ(row["models"], json::array({"a", "b", "idle"}));
  EXPECT_EQ(row["images_per_second"], json(12.5));
  EXPECT_EQ(row["power_watts"], json(3.25));
  EXPECT_TRUE(row["temperature_c"].is_null());
  EXPECT_EQ(row["queue_depth"], json(3));
  EXPECT_EQ(row["p99_us"], json(2500));
  EXPECT_TRUE(row["error"].is_null()) << row.dump();
}

TEST(FleetRows, UnreachablePeerIsARowWithTheReason) {
  const json row =
      peer_row("gone:1", no_answer("connect: Connection refused"), no_answer("connect: Connection refused"));
  EXPECT_EQ(row["reachable"], false);
  EXPECT_EQ(row["ready"], false);
  EXPECT_EQ(row["error"], "connect: Connection refused");
  EXPECT_TRUE(row["device_kind"].is_null());
  EXPECT_TRUE(row["power_watts"].is_null());
  EXPECT_EQ(row["models"], json::array());
  // Every row has every field, whatever happened.
  const json full = peer_row("b:1", answer(200, telemetry_json().dump()), answer(200, R"({"ready": true})"));
  for (const auto& [key, value] : full.items()) EXPECT_TRUE(row.contains(key)) << key;
  EXPECT_EQ(row.size(), full.size());
}

TEST(FleetRows, TokenRefusalAndDrainingAreToldApart) {
  const json locked =
      peer_row("b:1", answer(401, R"({"error": {"code": "UNAUTHENTICATED", "message": "missing bearer token"}})"),
               answer(200, R"({"ready": true})"));
  EXPECT_EQ(locked["reachable"], true);
  EXPECT_EQ(locked["ready"], true);
  EXPECT_TRUE(locked["device_kind"].is_null());
  EXPECT_EQ(locked["error"], "telemetry: HTTP 401: missing bearer token");

  const json draining = peer_row("b:1", answer(200, telemetry_json().dump()),
                                 answer(400, R"({"error": "not ready: the server is shutting down"})"));
  EXPECT_EQ(draining["reachable"], true);
  EXPECT_EQ(draining["ready"], false);
  EXPECT_EQ(draining["device_kind"], "emu");
  EXPECT_TRUE(draining["error"].is_null()) << draining.dump();

  const json garbled = peer_row("b:1", answer(200, "<html>"), no_answer("no answer within 100 ms"));
  EXPECT_EQ(garbled["reachable"], true);
  EXPECT_EQ(garbled["error"], "telemetry: bad answer: not a JSON object; readiness: no answer within 100 ms");
}

// Issue 24: a field of the wrong type (nlohmann's value() threw type_error.302 and ended the
// daemon) is left null and named; the fields of the right type are still shown.
TEST(FleetRows, FieldsOfTheWrongTypeAreABadAnswerNotAnException) {
  json telemetry = telemetry_json();
  telemetry["ready"] = "yes";
  telemetry["models"][0]["latency"][1]["stage"] = 5;
  bool bad_answer = false;
  const json row = peer_row("b:1", answer(200, telemetry.dump()), answer(200, R"({"ready": "yes"})"), &bad_answer);
  EXPECT_TRUE(bad_answer);
  EXPECT_EQ(row["reachable"], true);
  EXPECT_EQ(row["ready"], false);
  EXPECT_EQ(row["device_kind"], "emu");
  EXPECT_EQ(row["p99_us"], json(2500));  // model a's total stage is unreadable, b's is there
  EXPECT_EQ(row["error"],
            "telemetry: bad answer: ready must be a boolean; models[0].latency[1].stage must be a string; "
            "readiness: bad answer: ready must be a boolean");

  // Many faults: the first three are named, the rest counted.
  const json all_wrong = {{"device_kind", 1},   {"board", 2},       {"power_watts", "3"},
                          {"queue_depth", "4"}, {"models", {1, 2}}, {"devices", {{{"index", "0"}}}}};
  const json many = peer_row("b:1", answer(200, all_wrong.dump()), answer(200, R"({"ready": true})"), &bad_answer);
  EXPECT_TRUE(bad_answer);
  EXPECT_EQ(many["error"],
            "telemetry: bad answer: device_kind must be a string; board must be a string; models[0] must be an "
            "object (and 4 more)");
  EXPECT_EQ(many["ready"], true);

  const json fine =
      peer_row("b:1", answer(200, telemetry_json().dump()), answer(200, R"({"ready": true})"), &bad_answer);
  EXPECT_FALSE(bad_answer);
  EXPECT_TRUE(fine["error"].is_null());
}

TEST(FleetRows, SelfRowComesFromTheOwnSnapshot) {
  const json row = self_row("127.0.0.1:8080", telemetry_json(), false);
  EXPECT_EQ(row["self"], true);
  EXPECT_EQ(row["reachable"], true);
  EXPECT_EQ(row["ready"], false);
  EXPECT_EQ(row["target"], "127.0.0.1:8080");
  EXPECT_EQ(row["p99_us"], json(2500));
}

}  // namespace
}  // namespace tessera::fleet
