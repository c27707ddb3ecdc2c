// Triton's statistics extension (docs/protocol/extension_statistics.md) against the real daemon:
// GET /v2/models[/{m}[/versions/{v}]]/stats and gRPC ModelStatistics after a known number of
// requests through every door (tessera.v1 gRPC, POST /v1/classify, KServe REST and gRPC), with
// failed ones; the counters' shape is Triton's, with 64-bit counters as plain JSON numbers.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

const char* const kStages[] = {"queue", "compute_input", "compute_infer", "compute_output"};

uint64_t ms_since_epoch() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// {"count": n, "ns": n}, both plain unsigned JSON numbers.
void expect_duration(const json& stat, const std::string& what) {
  ASSERT_TRUE(stat.is_object()) << what << ": " << stat.dump();
  EXPECT_EQ(stat.size(), 2u) << what << ": " << stat.dump();
  EXPECT_TRUE(stat["count"].is_number_unsigned()) << what << ": " << stat.dump();
  EXPECT_TRUE(stat["ns"].is_number_unsigned()) << what << ": " << stat.dump();
}

uint64_t count(const json& stat) { return stat["count"].get<uint64_t>(); }
uint64_t ns(const json& stat) { return stat["ns"].get<uint64_t>(); }

// One model_stats entry: every field of Triton's $model_stat, with its JSON type.
void expect_model_stat_shape(const json& m) {
  for (const char* key : {"last_inference", "inference_count", "execution_count"}) {
    EXPECT_TRUE(m[key].is_number_unsigned()) << key << ": " << m.dump();
  }
  EXPECT_TRUE(m["name"].is_string());
  EXPECT_TRUE(m["version"].is_string());
  for (const char* key :
       {"success", "fail", "queue", "compute_input", "compute_infer", "compute_output", "cache_hit", "cache_miss"}) {
    expect_duration(m["inference_stats"][key], key);
  }
  EXPECT_EQ(count(m["inference_stats"]["cache_hit"]), 0u);
  EXPECT_EQ(count(m["inference_stats"]["cache_miss"]), 0u);
  ASSERT_TRUE(m["batch_stats"].is_array()) << m.dump();
  for (const json& b : m["batch_stats"]) {
    EXPECT_TRUE(b["batch_size"].is_number_unsigned()) << b.dump();
    for (const char* key : {"compute_input", "compute_infer", "compute_output"}) expect_duration(b[key], key);
  }
}

// The bundled model twice: as itself and as "fashion-mnist-twin" (its model.toml renamed).
class TwoModels {
 public:
  TwoModels() : copy_(8, 2000, 256) {
    const std::filesystem::path twin = copy_.path() / "twin";
    std::filesystem::copy(copy_.path() / kFmnistModel, twin, std::filesystem::copy_options::recursive);
    std::string toml = read_binary(twin / "model.toml");
    const std::string name = "name = \"fashion-mnist\"";
    toml.replace(toml.find(name), name.size(), "name = \"fashion-mnist-twin\"");
    std::ofstream(twin / "model.toml", std::ios::trunc) << toml;
  }
  const std::filesystem::path& path() const { return copy_.path(); }

 private:
  ModelsCopy copy_;
};

class KserveStatisticsTest : public DaemonTest {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<TesseradProcess>(std::vector<std::string>{}, models_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    stub_ = daemon_->stub();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 4u) << "too few images in " << TESSERA_FMNIST_DIR;
    http_ = std::make_unique<HttpClient>(daemon_->http_port());
    kserve_ = kserve_stub(*daemon_);
  }

  json get_json(const std::string& target) {
    const HttpReply reply = http_->get(target);
    EXPECT_EQ(reply.status, 200) << target << ": " << reply.error << reply.body;
    EXPECT_EQ(reply.header("content-type"), "application/json");
    return json::parse(reply.body, nullptr, false);
  }

  // The model's entries, checked for shape.
  json fmnist_stats() {
    const json body = get_json("/v2/models/fashion-mnist/stats");
    EXPECT_TRUE(body.contains("model_stats")) << body.dump();
    for (const json& m : body["model_stats"]) expect_model_stat_shape(m);
    return body["model_stats"];
  }

  // `n` successful requests through each door: tessera.v1 gRPC, POST /v1/classify, KServe REST
  // (BYTES), KServe gRPC (BYTES); 4n in all.
  void succeed_through_every_door(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string png = read_binary(images_[static_cast<size_t>(i) % images_.size()].png);
      const GrpcAnswer v1 = classify_grpc(*stub_, png, kFmnistModel);
      ASSERT_TRUE(v1.status.ok()) << v1.status.error_message();
      const HttpReply classify = http_->post("/v1/classify?model=fashion-mnist", png, "image/png");
      ASSERT_EQ(classify.status, 200) << classify.error << classify.body;
      const json body = {
          {"inputs", {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {base64(png)}}}}}};
      const HttpReply rest = http_->post("/v2/models/fashion-mnist/infer", body.dump(), "application/json");
      ASSERT_EQ(rest.status, 200) << rest.error << rest.body;
      const KserveAnswer grpc = kserve_infer(*kserve_, bytes_request(png));
      ASSERT_TRUE(grpc.status.ok()) << grpc.status.error_message();
    }
  }

  TwoModels models_;
  std::vector<FmnistImage> images_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
};

// Before any request: the served version is listed with zero counters and no batch sizes.
TEST_F(KserveStatisticsTest, StartsAtZero) {
  const json stats = fmnist_stats();
  ASSERT_EQ(stats.size(), 1u) << stats.dump();
  const json& m = stats[0];
  EXPECT_EQ(m["name"], "fashion-mnist");
  EXPECT_EQ(m["version"], "1");
  EXPECT_EQ(m["last_inference"], 0u);
  EXPECT_EQ(m["inference_count"], 0u);
  EXPECT_EQ(m["execution_count"], 0u);
  EXPECT_EQ(count(m["inference_stats"]["success"]), 0u);
  EXPECT_EQ(count(m["inference_stats"]["fail"]), 0u);
  EXPECT_TRUE(m["batch_stats"].empty());
}

// Every door's requests count once; the stage durations add up within the requests' own time;
// the batch sizes account for every inference and execution.
TEST_F(KserveStatisticsTest, CountsEveryDoorsRequests) {
  const uint64_t before_ms = ms_since_epoch();
  succeed_through_every_door(3);
  const uint64_t after_ms = ms_since_epoch();

  const json stats = fmnist_stats();
  ASSERT_EQ(stats.size(), 1u) << stats.dump();
  const json& m = stats[0];
  const json& s = m["inference_stats"];
  EXPECT_EQ(count(s["success"]), 12u) << m.dump();
  EXPECT_EQ(count(s["fail"]), 0u) << m.dump();
  EXPECT_EQ(m["inference_count"], 12u) << m.dump();
  EXPECT_GE(m["last_inference"].get<uint64_t>(), before_ms);
  EXPECT_LE(m["last_inference"].get<uint64_t>(), after_ms);
  uint64_t stage_ns = 0;
  for (const char* stage : kStages) {
    EXPECT_EQ(count(s[stage]), 12u) << stage;
    EXPECT_GT(ns(s[stage]), 0u) << stage;
    stage_ns += ns(s[stage]);
  }
  // Each request's stages are disjoint parts of its time in the server.
  EXPECT_LE(stage_ns, ns(s["success"])) << s.dump();

  uint64_t images = 0;
  uint64_t executions = 0;
  std::set<uint64_t> sizes;
  for (const json& b : m["batch_stats"]) {
    const uint64_t size = b["batch_size"].get<uint64_t>();
    EXPECT_TRUE(sizes.insert(size).second) << "batch size " << size << " listed twice";
    EXPECT_GE(size, 1u);
    EXPECT_LE(size, 8u);  // the daemon's default max batch
    const uint64_t runs = count(b["compute_infer"]);
    EXPECT_EQ(count(b["compute_input"]), runs);
    EXPECT_EQ(count(b["compute_output"]), runs);
    EXPECT_GT(ns(b["compute_infer"]), 0u);
    images += size * runs;
    executions += runs;
  }
  EXPECT_EQ(images, 12u) << m.dump();
  EXPECT_EQ(m["execution_count"].get<uint64_t>(), executions) << m.dump();
}

// Requests refused after their model was found count as failures, with their time; a request
// for a model that is not served counts nowhere.
TEST_F(KserveStatisticsTest, FailedRequestsCountAsFail) {
  succeed_through_every_door(1);
  // KServe REST: an FP32 tensor of the wrong shape for the model.
  const json wrong_shape = {
      {"inputs", {{{"name", "input"}, {"datatype", "FP32"}, {"shape", {1, 1, 2, 2}}, {"data", {0, 0, 0, 0}}}}}};
  const HttpReply rest = http_->post("/v2/models/fashion-mnist/infer", wrong_shape.dump(), "application/json");
  EXPECT_EQ(rest.status, 400) << rest.body;
  // tessera.v1: an empty image.
  const GrpcAnswer v1 = classify_grpc(*stub_, "", kFmnistModel);
  EXPECT_EQ(v1.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << v1.status.error_message();
  // KServe gRPC: bytes that are no image pass admission and fail in the batcher's decode.
  const KserveAnswer grpc = kserve_infer(*kserve_, bytes_request("not an image at all"));
  EXPECT_EQ(grpc.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << grpc.status.error_message();
  // Not served: no model's counters.
  const HttpReply unknown = http_->post("/v2/models/no-such-model/infer", wrong_shape.dump(), "application/json");
  EXPECT_EQ(unknown.status, 404) << unknown.body;

  const json stats = fmnist_stats();
  ASSERT_EQ(stats.size(), 1u);
  const json& s = stats[0]["inference_stats"];
  EXPECT_EQ(count(s["success"]), 4u) << s.dump();
  EXPECT_EQ(count(s["fail"]), 3u) << s.dump();
  EXPECT_GT(ns(s["fail"]), 0u) << s.dump();
  // Only successes have stages; the failed decode ran in no execution.
  EXPECT_EQ(count(s["compute_infer"]), 4u) << s.dump();
  EXPECT_EQ(stats[0]["inference_count"], 4u);
}

// A KServe request of several images is one request (success or fail) and that many inferences,
// as Triton counts a batched request; an image refused in it fails the request once.
TEST_F(KserveStatisticsTest, ABatchedRequestCountsOnceWithAnInferencePerImage) {
  json images = json::array();
  for (size_t i = 0; i < 3; ++i) images.push_back(base64(read_binary(images_[i].png)));
  const json batch = {{"inputs", {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {3}}, {"data", images}}}}};
  const HttpReply ok = http_->post("/v2/models/fashion-mnist/infer", batch.dump(), "application/json");
  ASSERT_EQ(ok.status, 200) << ok.error << ok.body;
  ASSERT_EQ(json::parse(ok.body)["outputs"][0]["shape"], json::array({3, 10})) << ok.body;
  // The second image is empty: admission refuses it, and with it the request.
  const json bad = {
      {"inputs", {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {2}}, {"data", {images[0], ""}}}}}};
  const HttpReply refused = http_->post("/v2/models/fashion-mnist/infer", bad.dump(), "application/json");
  EXPECT_EQ(refused.status, 400) << refused.body;

  const json stats = fmnist_stats();
  ASSERT_EQ(stats.size(), 1u);
  const json& s = stats[0]["inference_stats"];
  EXPECT_EQ(count(s["success"]), 1u) << s.dump();
  EXPECT_EQ(count(s["fail"]), 1u) << s.dump();
  EXPECT_EQ(count(s["queue"]), 1u) << s.dump();
  EXPECT_EQ(stats[0]["inference_count"], 3u) << stats.dump();
  uint64_t images_in_batches = 0;
  for (const json& b : stats[0]["batch_stats"]) {
    images_in_batches += b["batch_size"].get<uint64_t>() * count(b["compute_infer"]);
  }
  EXPECT_EQ(images_in_batches, 3u) << stats.dump();
}

// The gRPC answer carries the same counters as REST's; all models, one model's versions, one
// version; an unknown model or version is NOT_FOUND / 404 in Triton's error shape.
TEST_F(KserveStatisticsTest, GrpcAgreesAndSelectsModels) {
  succeed_through_every_door(1);
  const json rest = fmnist_stats();
  ASSERT_EQ(rest.size(), 1u);

  inference::ModelStatisticsRequest request;
  request.set_name(kFmnistModel);
  inference::ModelStatisticsResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  const grpc::Status status = kserve_->ModelStatistics(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.model_stats_size(), 1);
  const inference::ModelStatistics& g = response.model_stats(0);
  EXPECT_EQ(g.name(), "fashion-mnist");
  EXPECT_EQ(g.version(), "1");
  EXPECT_EQ(g.inference_count(), rest[0]["inference_count"].get<uint64_t>());
  EXPECT_EQ(g.execution_count(), rest[0]["execution_count"].get<uint64_t>());
  EXPECT_EQ(g.last_inference(), rest[0]["last_inference"].get<uint64_t>());
  EXPECT_EQ(g.inference_stats().success().count(), 4u);
  EXPECT_EQ(g.inference_stats().success().ns(), ns(rest[0]["inference_stats"]["success"]));
  EXPECT_EQ(g.inference_stats().compute_infer().ns(), ns(rest[0]["inference_stats"]["compute_infer"]));
  EXPECT_EQ(g.batch_stats_size(), static_cast<int>(rest[0]["batch_stats"].size()));

  // Every model: both are listed with their version; the twin's counters saw none of these
  // requests.
  const json all = get_json("/v2/models/stats");
  std::set<std::string> names;
  for (const json& m : all["model_stats"]) {
    expect_model_stat_shape(m);
    names.insert(m["name"].get<std::string>());
    if (m["name"] != "fashion-mnist") {
      EXPECT_EQ(count(m["inference_stats"]["success"]), 0u) << m.dump();
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"fashion-mnist", "fashion-mnist-twin"})) << all.dump();
  inference::ModelStatisticsResponse every;
  grpc::ClientContext every_context;
  ASSERT_TRUE(kserve_->ModelStatistics(&every_context, inference::ModelStatisticsRequest(), &every).ok());
  EXPECT_EQ(every.model_stats_size(), static_cast<int>(all["model_stats"].size()));

  EXPECT_EQ(get_json("/v2/models/fashion-mnist/versions/1/stats")["model_stats"].size(), 1u);
  for (const char* target : {"/v2/models/no-such-model/stats", "/v2/models/fashion-mnist/versions/7/stats"}) {
    const HttpReply reply = http_->get(target);
    EXPECT_EQ(reply.status, 404) << target << ": " << reply.body;
    const json body = json::parse(reply.body, nullptr, false);
    EXPECT_TRUE(body.is_object() && body["error"].is_string()) << reply.body;
  }
  request.set_name("no-such-model");
  grpc::ClientContext unknown_context;
  EXPECT_EQ(kserve_->ModelStatistics(&unknown_context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Statistics live as long as the version is loaded: a reload serves a new version object whose
// counters start at zero, while the other model's keep counting.
TEST_F(KserveStatisticsTest, ReloadStartsNewCounters) {
  succeed_through_every_door(1);
  const GrpcAnswer twin = classify_grpc(*stub_, read_binary(images_[0].png), "fashion-mnist-twin");
  ASSERT_TRUE(twin.status.ok()) << twin.status.error_message();
  ASSERT_EQ(count(fmnist_stats()[0]["inference_stats"]["success"]), 4u);

  const HttpReply load = http_->post("/v2/repository/models/fashion-mnist/load", "{}", "application/json");
  ASSERT_EQ(load.status, 200) << load.body;
  // The reload swaps the new version in when it is ready: bounded wait for its fresh counters.
  uint64_t successes = 4;
  for (int i = 0; i < 300 && successes != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const json stats = fmnist_stats();
    ASSERT_EQ(stats.size(), 1u) << stats.dump();
    successes = count(stats[0]["inference_stats"]["success"]);
  }
  EXPECT_EQ(successes, 0u) << "the reloaded version still shows the old counters";
  const json twin_stats = get_json("/v2/models/fashion-mnist-twin/stats");
  EXPECT_EQ(count(twin_stats["model_stats"][0]["inference_stats"]["success"]), 1u) << twin_stats.dump();
  succeed_through_every_door(1);
  EXPECT_EQ(count(fmnist_stats()[0]["inference_stats"]["success"]), 4u);
}

}  // namespace
}  // namespace tessera::testing
