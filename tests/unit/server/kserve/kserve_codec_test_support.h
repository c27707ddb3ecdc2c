// Helpers shared by the KServe v2 codec tests (test_kserve_*.cc): a small model signature,
// request builders for gRPC and JSON, and the check of a decode that must fail.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/base64.h"
#include "server/kserve/decode_grpc.h"
#include "server/kserve/decode_json.h"
#include "server/kserve/raw_contents.h"

namespace tessera::kserve::codec_test {

using inference::ModelInferRequest;
using nlohmann::json;

// A 1 x 4 x 4 input, three classes, the last one unlabelled.
inline ModelSignature test_model() {
  ModelSignature m;
  m.name = "fmnist";
  m.platform = "tessera_int8";
  m.channels = 1;
  m.height = 4;
  m.width = 4;
  m.num_classes = 3;
  m.labels = {"cat", "dog", ""};
  return m;
}

// Enough of a PNG for the magic-byte check.
inline std::string png_bytes() { return std::string("\x89PNG\r\n\x1a\n", 8) + "IHDR-and-the-rest"; }
inline std::vector<uint8_t> as_vector(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string b64(const std::string& s) { return base64_encode(as_vector(s)); }

inline std::string raw_element(const std::string& s) {
  std::string raw;
  append_raw_bytes(raw, s);
  return raw;
}

inline ModelInferRequest grpc_request(const std::string& datatype, const std::vector<int64_t>& shape) {
  ModelInferRequest r;
  r.set_model_name("fmnist");
  r.set_id("req-1");
  auto* in = r.add_inputs();
  in->set_name("image");
  in->set_datatype(datatype);
  for (int64_t d : shape) in->add_shape(d);
  return r;
}

inline ModelInferRequest grpc_png_request() {
  ModelInferRequest r = grpc_request("BYTES", {1});
  r.mutable_inputs(0)->mutable_contents()->add_bytes_contents(png_bytes());
  return r;
}

inline void add_classification(ModelInferRequest& r, int64_t k) {
  auto* out = r.add_outputs();
  out->set_name("probabilities");
  (*out->mutable_parameters())["classification"].set_int64_param(k);
}

// The error of a decode that must fail: INVALID_ARGUMENT (unless `code` says otherwise) whose
// message contains `needle`.
template <class R>
inline void expect_error(const R& result, const std::string& needle, StatusCode code = StatusCode::kInvalidArgument) {
  ASSERT_FALSE(result.is_ok()) << "expected an error containing: " << needle;
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  EXPECT_NE(result.status().message().find(needle), std::string::npos)
      << "message: " << result.status().message() << "\nwanted: " << needle;
}

inline Result<InferRequest> decode(const ModelInferRequest& r, const DecodeLimits& limits = {}) {
  return decode_infer_request(r, test_model(), limits);
}
inline Result<InferRequest> decode(const json& body, const DecodeLimits& limits = {}) {
  return decode_infer_request_json(body, test_model(), limits);
}

inline json json_png_request() {
  return {{"id", "j-1"},
          {"inputs", {{{"name", "image"}, {"shape", {1}}, {"datatype", "BYTES"}, {"data", {b64(png_bytes())}}}}}};
}

inline json json_fp32_request(json data, json shape = {1, 1, 4, 4}) {
  return {{"inputs", {{{"name", "input"}, {"shape", shape}, {"datatype", "FP32"}, {"data", data}}}}};
}

}  // namespace tessera::kserve::codec_test
