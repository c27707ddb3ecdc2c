// The bounds of a KServe JSON infer body (decode_json.h, json_body_limits): the byte limit derived
// from the model, and the depth and value count checked while parsing (issue 24, item 4).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "server/kserve/decode_json.h"
#include "tests/unit/server/kserve/kserve_codec_test_support.h"

namespace tessera::kserve {
namespace {

using codec_test::expect_error;
using codec_test::test_model;

std::string fp32_body(const std::string& data) {
  return R"({"inputs":[{"name":"input","datatype":"FP32","shape":[1,1,4,4],"data":)" + data + "}]}";
}

// `count` zeros in one flat array.
std::string zeros(size_t count) {
  std::string out = "[0";
  for (size_t i = 1; i < count; ++i) out += ",0";
  return out + "]";
}

TEST(KserveJsonLimits, DerivedFromTheModelsInput) {
  const ModelSignature model = test_model();
  const uint64_t elements = static_cast<uint64_t>(model.channels) * model.height * model.width;
  const JsonBodyLimits limits = json_body_limits(model, 16);
  EXPECT_EQ(limits.max_bytes, 16 * (elements * 24 + 4096));
  EXPECT_EQ(limits.max_values, 16 * (elements + 1024));
  EXPECT_EQ(limits.max_depth, kMaxJsonDepth);
  EXPECT_EQ(json_body_limits(model, 1).max_bytes, elements * 24 + 4096);
}

TEST(KserveJsonLimits, DepthIsRefusedWhileParsing) {
  const ModelSignature model = test_model();
  const JsonBodyLimits limits = json_body_limits(model, 16);
  expect_error(decode_infer_request_body(fp32_body(std::string(100, '[') + std::string(100, ']')), model, {}, &limits),
               "JSON nested deeper than 32");
  // 32 levels are fine for the parser (the decoder then says the data is deeper than the shape).
  auto shallow = decode_infer_request_body(fp32_body(std::string(28, '[') + std::string(28, ']')), model, {}, &limits);
  ASSERT_FALSE(shallow.is_ok());
  EXPECT_EQ(shallow.status().message().find("JSON nested"), std::string::npos) << shallow.status().message();
}

TEST(KserveJsonLimits, ValueCountAndBytesAreRefused) {
  const ModelSignature model = test_model();
  JsonBodyLimits limits = json_body_limits(model, 16);
  limits.max_values = 100;
  expect_error(decode_infer_request_body(fp32_body(zeros(200)), model, {}, &limits), "more than 100 JSON values");
  limits = json_body_limits(model, 16);
  limits.max_bytes = 64;
  expect_error(decode_infer_request_body(fp32_body(zeros(16)), model, {}, &limits), "takes at most 64");
  // The model's own input still decodes under the default limits.
  auto ok = decode_infer_request_body(fp32_body(zeros(16)), model);
  EXPECT_TRUE(ok.is_ok()) << ok.status().to_string();
}

}  // namespace
}  // namespace tessera::kserve
