// The JSON of the model configuration and statistics extensions, against Triton's documents:
// ModelConfig in protobuf's JSON mapping with the proto field names and enum names, but 64-bit
// integers as JSON numbers (as Triton's endpoint writes them); statistics with every field of
// $model_stat and plain numbers for the 64-bit counters. And what a ServedModel's config says.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "accel/runtime/engine.h"
#include "accel/runtime/model_config.h"
#include "server/kserve/statistics.h"
#include "server/kserve/triton_model_config.h"
#include "server/models/model_repository.h"

namespace tessera::kserve {
namespace {

using nlohmann::json;
using std::chrono::nanoseconds;

std::set<std::string> keys(const json& object) {
  std::set<std::string> out;
  for (const auto& [key, value] : object.items()) out.insert(key);
  return out;
}

class KserveServedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = load_model_config(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist");
    ASSERT_TRUE(config.is_ok()) << config.status().to_string();
    auto engine = Engine::load(*config);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    model_.engine = std::move(engine).value();
    model_.batching = {6, 1500, 32};
    model_.precision = "int8";
    model_.device = "emu";
    model_.devices = {0, 1};
    model_.version = 3;
  }

  ServedModel model_;
};

TEST_F(KserveServedModelTest, ConfigJsonIsTritonsShape) {
  auto c = triton_model_config_json(make_triton_model_config(model_));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const json& config = *c;
  EXPECT_EQ(config["name"], "fashion-mnist");
  EXPECT_EQ(config["backend"], "tessera");
  EXPECT_EQ(config["platform"], "tessera_onnx");
  EXPECT_EQ(config["max_batch_size"], 6);
  // Every primitive field is there, defaults too (runtime ""), under its proto name.
  EXPECT_EQ(config["runtime"], "");
  const json& input = config["input"][0];
  EXPECT_EQ(input["data_type"], "TYPE_FP32");
  EXPECT_EQ(input["format"], "FORMAT_NCHW");
  ASSERT_TRUE(input["dims"].is_array());
  for (const json& d : input["dims"]) EXPECT_TRUE(d.is_number_integer()) << input.dump();
  EXPECT_EQ(input["dims"], json({1, 28, 28}));
  EXPECT_EQ(input["is_shape_tensor"], false);
  const json& output = config["output"][0];
  EXPECT_EQ(output["dims"], json({10}));
  EXPECT_EQ(output["label_filename"], "labels.txt");
  const json& batching = config["dynamic_batching"];
  EXPECT_EQ(batching["preferred_batch_size"], json({6}));
  EXPECT_TRUE(batching["max_queue_delay_microseconds"].is_number_unsigned()) << batching.dump();
  EXPECT_EQ(batching["max_queue_delay_microseconds"], 1500);
  EXPECT_EQ(batching["default_queue_policy"]["max_queue_size"], 32);
  EXPECT_EQ(batching["default_queue_policy"]["timeout_action"], "REJECT");
  ASSERT_EQ(config["instance_group"].size(), 1u);
  EXPECT_EQ(config["instance_group"][0]["count"], 2);
  EXPECT_EQ(config["instance_group"][0]["kind"], "KIND_CPU");
  EXPECT_EQ(config["version_policy"], json({{"latest", {{"num_versions", 1}}}}));
  EXPECT_EQ(config["parameters"]["precision"]["string_value"], "int8");
  EXPECT_EQ(config["parameters"]["devices"]["string_value"], "0,1");
}

// A board's instances are placed by the model itself (KIND_MODEL); fp32 on the host is one CPU
// instance.
TEST_F(KserveServedModelTest, InstanceKindFollowsTheDevice) {
  model_.device = "xrt";
  EXPECT_EQ(make_triton_model_config(model_).instance_group(0).kind(), inference::ModelInstanceGroup::KIND_MODEL);
  model_.device = "host";
  model_.devices.clear();
  const inference::ModelConfig host = make_triton_model_config(model_);
  EXPECT_EQ(host.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_CPU);
  EXPECT_EQ(host.instance_group(0).count(), 1);
}

// Every 64-bit integer field of the subset is a number, also the ones tesserad leaves at 0.
TEST(KserveConfigJson, Int64FieldsAreNumbers) {
  inference::ModelConfig config;
  config.mutable_version_policy()->mutable_specific()->add_versions(3);
  config.mutable_version_policy()->mutable_specific()->add_versions(5);
  inference::ModelInput* input = config.add_input();
  input->add_dims(-1);
  input->add_dims(4);
  input->mutable_reshape()->add_shape(2);
  input->mutable_reshape()->add_shape(2);
  inference::ModelDynamicBatching* batching = config.mutable_dynamic_batching();
  batching->set_max_queue_delay_microseconds(uint64_t{1} << 40);
  batching->mutable_default_queue_policy()->set_default_timeout_microseconds(7);
  auto c = triton_model_config_json(config);
  ASSERT_TRUE(c.is_ok());
  const json& j = *c;
  EXPECT_EQ(j["version_policy"]["specific"]["versions"], json({3, 5}));
  EXPECT_EQ(j["input"][0]["dims"], json({-1, 4}));
  EXPECT_EQ(j["input"][0]["reshape"]["shape"], json({2, 2}));
  EXPECT_EQ(j["dynamic_batching"]["max_queue_delay_microseconds"], uint64_t{1} << 40);
  EXPECT_EQ(j["dynamic_batching"]["default_queue_policy"]["default_timeout_microseconds"], 7);
  EXPECT_TRUE(j["dynamic_batching"]["priority_levels"].is_number_unsigned()) << j.dump();
  EXPECT_EQ(j["dynamic_batching"]["default_priority_level"], 0);
}

TEST_F(KserveServedModelTest, StatisticsJsonIsTritonsShape) {
  constexpr uint64_t kBig = (uint64_t{1} << 53) + 2;  // past a double's integers: a number, exactly
  model_.statistics->record_success(nanoseconds(kBig),
                                    {nanoseconds(1), nanoseconds(2), nanoseconds(3), nanoseconds(4)});
  model_.statistics->record_failure(nanoseconds(9));
  model_.statistics->record_execution(1, {{}, nanoseconds(2), nanoseconds(3), nanoseconds(4)});
  inference::ModelStatisticsResponse response;
  *response.add_model_stats() = make_model_statistics(model_);
  const json body = statistics_json(response);
  EXPECT_EQ(keys(body), (std::set<std::string>{"model_stats"}));
  ASSERT_EQ(body["model_stats"].size(), 1u);
  const json& m = body["model_stats"][0];
  EXPECT_EQ(keys(m), (std::set<std::string>{"name", "version", "last_inference", "inference_count", "execution_count",
                                            "inference_stats", "batch_stats", "memory_usage", "response_stats"}));
  EXPECT_EQ(m["name"], "fashion-mnist");
  EXPECT_EQ(m["version"], "3");
  EXPECT_TRUE(m["last_inference"].is_number_unsigned());
  EXPECT_GT(m["last_inference"].get<uint64_t>(), 0u);
  EXPECT_EQ(m["inference_count"], 1u);
  EXPECT_EQ(m["execution_count"], 1u);
  const json& s = m["inference_stats"];
  EXPECT_EQ(keys(s), (std::set<std::string>{"success", "fail", "queue", "compute_input", "compute_infer",
                                            "compute_output", "cache_hit", "cache_miss"}));
  EXPECT_TRUE(s["success"]["ns"].is_number_unsigned()) << s.dump();
  EXPECT_EQ(s["success"]["ns"].get<uint64_t>(), kBig);
  EXPECT_EQ(s["success"]["count"], 1u);
  EXPECT_EQ(s["fail"], json({{"count", 1}, {"ns", 9}}));
  EXPECT_EQ(s["compute_output"], json({{"count", 1}, {"ns", 4}}));
  EXPECT_EQ(s["cache_hit"], json({{"count", 0}, {"ns", 0}}));
  EXPECT_EQ(m["batch_stats"], json::array({{{"batch_size", 1},
                                            {"compute_input", {{"count", 1}, {"ns", 2}}},
                                            {"compute_infer", {{"count", 1}, {"ns", 3}}},
                                            {"compute_output", {{"count", 1}, {"ns", 4}}}}}));
}

}  // namespace
}  // namespace tessera::kserve
