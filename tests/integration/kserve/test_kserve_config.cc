// Triton's model configuration extension (docs/protocol/extension_model_configuration.md) against
// the real daemon: GET /v2/models/{m}[/versions/{v}]/config and gRPC ModelConfig describe the
// model folder's model.toml (max batch, queue delay and size, instances, labels, input dims) in
// Triton's ModelConfig shape, the fields perf_analyzer reads first included; unknown models are
// 404 / NOT_FOUND.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

// The bundled model with [batching] max_batch 4, delay 3000 us, queue 64, and [instances] count 1
// of the daemon's two emulator instances.
class ConfiguredModel {
 public:
  ConfiguredModel() : copy_(4, 3000, 64) {
    std::ofstream(copy_.path() / kFmnistModel / "model.toml", std::ios::app) << "[instances]\ncount = 1\n";
  }
  const std::filesystem::path& path() const { return copy_.path(); }

 private:
  ModelsCopy copy_;
};

class KserveConfigTest : public DaemonTest {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<TesseradProcess>(std::vector<std::string>{"--device", "emu", "--devices", "0,1"},
                                                models_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    http_ = std::make_unique<HttpClient>(daemon_->http_port());
    kserve_ = kserve_stub(*daemon_);
  }

  // The labels file's lines.
  std::vector<std::string> label_lines(const std::string& file) const {
    std::istringstream in(read_binary(models_.path() / kFmnistModel / file));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) lines.push_back(line);
    }
    return lines;
  }

  ConfiguredModel models_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
};

TEST_F(KserveConfigTest, HttpConfigMatchesModelToml) {
  const HttpReply reply = http_->get("/v2/models/fashion-mnist/config");
  ASSERT_EQ(reply.status, 200) << reply.error << reply.body;
  EXPECT_EQ(reply.header("content-type"), "application/json");
  const json c = json::parse(reply.body);
  EXPECT_EQ(c["name"], "fashion-mnist");
  EXPECT_EQ(c["backend"], "tessera");
  EXPECT_EQ(c["platform"], "tessera_onnx");
  EXPECT_EQ(c["default_model_filename"], "model.onnx");
  // perf_analyzer: max_batch_size, then the inputs' dims (batch dimension left out) and types.
  EXPECT_EQ(c["max_batch_size"], 4) << reply.body;
  ASSERT_EQ(c["input"].size(), 1u) << reply.body;
  EXPECT_EQ(c["input"][0]["name"], "input");
  EXPECT_EQ(c["input"][0]["data_type"], "TYPE_FP32");
  EXPECT_EQ(c["input"][0]["format"], "FORMAT_NCHW");
  EXPECT_EQ(c["input"][0]["dims"], json({1, 28, 28})) << "64-bit dims are JSON numbers: " << reply.body;
  ASSERT_EQ(c["output"].size(), 1u) << reply.body;
  EXPECT_EQ(c["output"][0]["name"], "probabilities");
  EXPECT_EQ(c["output"][0]["data_type"], "TYPE_FP32");
  EXPECT_EQ(c["output"][0]["dims"], json({10}));
  ASSERT_TRUE(c["output"][0]["label_filename"].is_string()) << reply.body;
  EXPECT_EQ(label_lines(c["output"][0]["label_filename"]), fmnist_labels());
  // [batching]: the batch the batcher closes at, its delay, the queue that refuses when full.
  ASSERT_TRUE(c.contains("dynamic_batching")) << reply.body;
  EXPECT_EQ(c["dynamic_batching"]["preferred_batch_size"], json({4}));
  EXPECT_EQ(c["dynamic_batching"]["max_queue_delay_microseconds"], 3000) << reply.body;
  EXPECT_EQ(c["dynamic_batching"]["default_queue_policy"]["max_queue_size"], 64) << reply.body;
  // [instances] count = 1 of the daemon's two: one instance, on the CPU (the emulator).
  ASSERT_EQ(c["instance_group"].size(), 1u) << reply.body;
  EXPECT_EQ(c["instance_group"][0]["count"], 1);
  EXPECT_EQ(c["instance_group"][0]["kind"], "KIND_CPU");
  EXPECT_EQ(c["version_policy"], json({{"latest", {{"num_versions", 1}}}})) << reply.body;
  EXPECT_EQ(c["parameters"]["device"]["string_value"], "emu") << reply.body;

  const HttpReply versioned = http_->get("/v2/models/fashion-mnist/versions/1/config");
  ASSERT_EQ(versioned.status, 200) << versioned.body;
  EXPECT_EQ(json::parse(versioned.body), c);
}

TEST_F(KserveConfigTest, GrpcConfigMatchesModelToml) {
  inference::ModelConfigRequest request;
  request.set_name(kFmnistModel);
  inference::ModelConfigResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  const grpc::Status status = kserve_->ModelConfig(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const inference::ModelConfig& c = response.config();
  EXPECT_EQ(c.name(), "fashion-mnist");
  EXPECT_EQ(c.backend(), "tessera");
  EXPECT_EQ(c.max_batch_size(), 4);
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(std::vector<int64_t>(c.input(0).dims().begin(), c.input(0).dims().end()),
            (std::vector<int64_t>{1, 28, 28}));
  ASSERT_EQ(c.output_size(), 1);
  EXPECT_EQ(std::vector<int64_t>(c.output(0).dims().begin(), c.output(0).dims().end()), (std::vector<int64_t>{10}));
  EXPECT_EQ(label_lines(c.output(0).label_filename()), fmnist_labels());
  ASSERT_TRUE(c.has_dynamic_batching());
  EXPECT_EQ(c.dynamic_batching().max_queue_delay_microseconds(), 3000u);
  ASSERT_EQ(c.dynamic_batching().preferred_batch_size_size(), 1);
  EXPECT_EQ(c.dynamic_batching().preferred_batch_size(0), 4);
  ASSERT_EQ(c.instance_group_size(), 1);
  EXPECT_EQ(c.instance_group(0).count(), 1);
  EXPECT_EQ(c.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_CPU);

  request.set_name("no-such-model");
  grpc::ClientContext unknown;
  EXPECT_EQ(kserve_->ModelConfig(&unknown, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  request.set_name(kFmnistModel);
  request.set_version("9");
  grpc::ClientContext no_version;
  EXPECT_EQ(kserve_->ModelConfig(&no_version, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(KserveConfigTest, UnknownModelIsNotFound) {
  for (const char* target : {"/v2/models/no-such-model/config", "/v2/models/fashion-mnist/versions/9/config"}) {
    const HttpReply reply = http_->get(target);
    EXPECT_EQ(reply.status, 404) << target << ": " << reply.body;
    const json body = json::parse(reply.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body["error"].is_string()) << reply.body;
    EXPECT_FALSE(body["error"].get<std::string>().empty());
  }
  EXPECT_EQ(http_->post("/v2/models/fashion-mnist/config", "{}", "application/json").status, 405);
}

// GET /v2 and ServerMetadata list exactly the extensions that work, by Triton's names, and each
// listed one answers at its endpoint.
TEST_F(KserveConfigTest, ServerMetadataListsTheWorkingExtensions) {
  // Without --allow-client-shm: no system shared memory (KserveSharedMemoryTest checks it with).
  const std::vector<std::string> expected = {"classification", "model_repository", "model_configuration", "statistics",
                                             "binary_tensor_data"};
  const HttpReply reply = http_->get("/v2");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(json::parse(reply.body)["extensions"], json(expected)) << reply.body;
  inference::ServerMetadataResponse server;
  grpc::ClientContext context;
  ASSERT_TRUE(kserve_->ServerMetadata(&context, {}, &server).ok());
  EXPECT_EQ(std::vector<std::string>(server.extensions().begin(), server.extensions().end()), expected);

  EXPECT_EQ(http_->post("/v2/repository/index", "{}", "application/json").status, 200);
  EXPECT_EQ(http_->get("/v2/models/fashion-mnist/config").status, 200);
  EXPECT_EQ(http_->get("/v2/models/fashion-mnist/stats").status, 200);
  const json classify = {{"inputs",
                          {{{"name", "image"},
                            {"datatype", "BYTES"},
                            {"shape", {1}},
                            {"data", {base64(read_binary(load_fmnist_images().at(0).png))}}}}},
                         {"outputs", {{{"name", "probabilities"}, {"parameters", {{"classification", 2}}}}}}};
  const HttpReply classified = http_->post("/v2/models/fashion-mnist/infer", classify.dump(), "application/json");
  ASSERT_EQ(classified.status, 200) << classified.body;
  EXPECT_EQ(json::parse(classified.body)["outputs"][0]["datatype"], "BYTES") << classified.body;
}

}  // namespace
}  // namespace tessera::testing
