// Issue 24, item 4: deep or huge JSON bodies. A KServe infer body may be only a multiple of what
// its model takes (refused 413 from its head, before the body is read); under that, its depth and
// value count are checked while parsing, before a JSON document exists (400); and the bodies all
// connections hold at once come out of one daemon-wide budget (503 past it, also from the head).
// The daemon's peak memory (VmHWM) must not grow by the bodies' hundreds of megabytes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/kserve_client.h"
#include "tests/integration/proc_status.h"
#include "tests/integration/raw_connection.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr size_t kSixteenMiB = 16 << 20;

std::string post_head(const std::string& target, size_t length, const std::string& type = "application/json") {
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + type +
         "\r\nConnection: close\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
}

// One request on its own connection; the raw answer (empty when none came in `timeout`).
std::string exchange(int port, const std::string& target, const std::string& body, milliseconds timeout) {
  RawConnection connection(port);
  if (!connection.send(post_head(target, body.size()) + body)) return "";
  return connection.read_until_closed(timeout);
}

// A KServe FP32 request for the bundled 1x1x28x28 model whose data is `data` (JSON text).
std::string infer_body(const std::string& data) {
  return R"({"inputs":[{"name":"input","datatype":"FP32","shape":[1,1,28,28],"data":)" + data + "}]}";
}

// `count` copies of `item` separated by commas, in brackets.
std::string array_of(const std::string& item, size_t count) {
  std::string out = "[";
  out.reserve(count * (item.size() + 1) + 2);
  for (size_t i = 0; i < count; ++i) {
    if (i != 0) out += ',';
    out += item;
  }
  return out + "]";
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

class JsonBodyLimitsTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    pid_ = daemon_->pid();
    ASSERT_GT(pid_, 0);
  }
  pid_t pid_ = -1;
};

TEST_F(JsonBodyLimitsTest, HugeBodiesAreRefusedFromTheirHead) {
  const long hwm_before = proc_status_kb(pid_, "VmHWM:");
  // The issue's three: 16 MiB of small nested arrays, 5 M levels deep, a flat 8.4 M numbers.
  const std::string bodies[] = {
      infer_body(array_of("[0.5]", kSixteenMiB / 6 - 20)),
      nested(5'000'000),
      array_of("0", kSixteenMiB / 2 - 1),
  };
  for (const std::string& body : bodies) {
    ASSERT_LE(body.size(), kSixteenMiB);
    const std::string answer = exchange(daemon_->http_port(), kFmnistInferPath, body, milliseconds(30000));
    EXPECT_EQ(http_status_of(answer), 413) << answer.substr(0, 300);
    EXPECT_NE(answer.find("larger than the limit"), std::string::npos) << answer.substr(0, 300);
  }
  const long hwm_grown = proc_status_kb(pid_, "VmHWM:") - hwm_before;
  EXPECT_LT(hwm_grown, 64 << 10) << "kB of peak memory for bodies that are refused";
  // Still serving.
  HttpClient client(daemon_->http_port());
  EXPECT_EQ(client.get("/v2/health/ready").status, 200);
}

TEST_F(JsonBodyLimitsTest, DepthAndValueCountAreCheckedWhileParsing) {
  HttpClient client(daemon_->http_port());
  // Small in bytes, deep: refused by depth, not by what a parsed document would lack.
  HttpReply reply = client.post(kFmnistInferPath, infer_body(nested(10'000)), "application/json");
  EXPECT_EQ(reply.status, 400);
  EXPECT_NE(reply.body.find("JSON nested deeper than"), std::string::npos) << reply.body;
  // Within the byte limit, too many values: refused while parsing, not after counting elements.
  reply = client.post(kFmnistInferPath, infer_body(array_of("0", 100'000)), "application/json");
  EXPECT_EQ(reply.status, 400);
  EXPECT_NE(reply.body.find("JSON values"), std::string::npos) << reply.body;
  // The largest honest body (full-precision numbers, pretty-printed) still fits.
  json request = json::parse(infer_body(array_of("-0.12345678901234567", 784)));
  request["inputs"][0]["data"] = json::array();
  for (int i = 0; i < 784; ++i) request["inputs"][0]["data"].push_back(-0.12345678901234567 * (i % 7));
  reply = client.post(kFmnistInferPath, request.dump(4), "application/json");
  EXPECT_EQ(reply.status, 200) << reply.body;
}

// A budget of one body (1 MiB) for the whole daemon.
class BodyBudgetTest : public JsonBodyLimitsTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--http-body-budget-mb", "1", "--max-image-bytes", "1048576"};
  }
};

TEST_F(BodyBudgetTest, ConcurrentBodiesShareOneBudget) {
  constexpr size_t kBody = 1'000'000;
  // The first request's body is under way (its head read, its body not all sent).
  RawConnection first(daemon_->http_port());
  ASSERT_TRUE(first.send(post_head("/v1/classify", kBody, "image/png") + std::string(1000, 'x')));
  std::this_thread::sleep_for(milliseconds(500));
  // The second is refused from its head, at once, without sending its body.
  RawConnection second(daemon_->http_port());
  ASSERT_TRUE(second.send(post_head("/v1/classify", kBody, "image/png")));
  const std::string refused = second.read_until_closed(milliseconds(5000));
  EXPECT_EQ(http_status_of(refused), 503) << refused;
  EXPECT_NE(refused.find("limit of request bodies"), std::string::npos) << refused;
  // Small bodies (64 KiB at most) do not wait for the budget: a trickling client cannot starve them.
  const std::string small = exchange(daemon_->http_port(), "/v1/classify", std::string(1000, 'x'), milliseconds(10000));
  EXPECT_EQ(http_status_of(small), 400) << small.substr(0, 300);
  // The first one's share comes back when it ends; then a body of that size is read again.
  ASSERT_TRUE(first.send(std::string(kBody - 1000, 'x')));
  EXPECT_EQ(http_status_of(first.read_until_closed(milliseconds(10000))), 400);  // not a PNG
  const std::string again =
      exchange(daemon_->http_port(), "/v1/classify", std::string(kBody, 'x'), milliseconds(10000));
  EXPECT_EQ(http_status_of(again), 400) << again.substr(0, 300);
}

}  // namespace
}  // namespace tessera::testing
