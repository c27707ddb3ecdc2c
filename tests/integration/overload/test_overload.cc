// Overload (issue 15, point 4): tesserad driven open-loop at twice the capacity measured on this
// machine just before. What must hold: admitted requests keep a bounded p99, the others are
// refused at once (RESOURCE_EXHAUSTED over gRPC, 503 with Retry-After over HTTP), nothing is
// lost or answered otherwise, and the daemon's memory stays flat from one overload to the next.
// Runs serially (its own CTest entry): the capacity it measures must be the machine's.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/integration/cli_test_util.h"
#include "tests/integration/daemon_test.h"
#include "tests/integration/proc_status.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

class OverloadTest : public DaemonTest {
 protected:
  // A short queue, so overload is refused rather than queued for long.
  std::vector<std::string> extra_args() const override { return {"--max-queue", "16"}; }

  // `tessera bench --json` against the daemon with `args`; null when it printed no report.
  json bench(std::vector<std::string> args) {
    args.insert(args.begin(), {"bench", "--server", daemon_->grpc_address(), "--images", TESSERA_FMNIST_DIR, "--json"});
    const ProcessOutput out = run_tessera(args, milliseconds(120000));
    EXPECT_EQ(out.exit_status, 0) << out.err;
    return json::parse(out.out, nullptr, false);
  }

  // One open-loop run at `rate` for `seconds`, checked: every request OK or refused at once.
  json overload(double rate, int seconds) {
    json report = bench({"--rate", std::to_string(rate), "--duration", std::to_string(seconds), "--max-outstanding",
                         "4000", "--timeout", "10"});
    const json& r = report;  // read without inserting
    EXPECT_TRUE(r.is_object());
    if (!r.is_object()) return report;
    const json& n = r["requests"];
    EXPECT_EQ(n["unanswered"], 0) << n;
    EXPECT_EQ(n["not_sent"], 0) << n;
    EXPECT_GT(n["ok"].get<int>(), 0) << n;
    for (const auto& [code, count] : r["errors"].items()) {
      EXPECT_EQ(code, "RESOURCE_EXHAUSTED") << count << " x " << r["error_examples"][code];
    }
    return report;
  }
};

TEST_F(OverloadTest, TwiceTheCapacityRefusesTheExcessAtOnceAndKeepsAdmittedLatencyAndMemoryFlat) {
  const json capacity = bench({"--concurrency", "16", "--duration", "3"});
  ASSERT_TRUE(capacity.is_object());
  const double ips = capacity["throughput_ips"].get<double>();
  ASSERT_GT(ips, 0);
  const double rate = 2 * ips;

  // HTTP alongside: each refusal is a 503 with Retry-After, answered at once.
  std::atomic<bool> done{false};
  int refused_http = 0;
  std::thread http_side([&] {
    HttpClient http(daemon_->http_port());
    const std::string png = read_binary(load_fmnist_images().at(0).png);
    while (!done) {
      const auto sent = std::chrono::steady_clock::now();
      const HttpReply reply = http.post("/v1/classify", png, "image/png");
      if (reply.status != 503) continue;
      ++refused_http;
      EXPECT_EQ(reply.header("retry-after"), "1");
      EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::milliseconds(250)) << "a refusal waits";
    }
  });
  const pid_t pid = daemon_->pid();
  const json first = overload(rate, 5);  // warms up whatever overload allocates
  const long rss_warm = proc_status_kb(pid, "VmRSS:");
  const json second = overload(rate, 5);
  const long rss_after = proc_status_kb(pid, "VmRSS:");
  done = true;
  http_side.join();

  ASSERT_TRUE(first.is_object() && second.is_object());
  const int refused = second["errors"].value("RESOURCE_EXHAUSTED", 0);
  EXPECT_GT(refused, 0) << "at twice the capacity (" << rate << "/s) nothing was refused: " << second["requests"];
  // Admitted requests wait at most for a short queue: p99 well under the 10 s timeout.
  EXPECT_LT(second["latency_ms"]["p99"].get<double>(), 500) << second["latency_ms"];
  EXPECT_GT(rss_warm, 0);
  EXPECT_LT(rss_after, rss_warm + std::max(rss_warm / 10, 8192L)) << "RSS " << rss_warm << " -> " << rss_after << " kB";
  std::cout << "capacity " << ips << " images/s; at " << rate << "/s: ok " << second["requests"]["ok"] << ", refused "
            << refused << ", admitted p99 " << second["latency_ms"]["p99"] << " ms; HTTP 503s " << refused_http
            << "; RSS " << rss_warm << " -> " << rss_after << " kB\n";
}

}  // namespace
}  // namespace tessera::testing
