// What the CLI learns of a KServe model before it sends images (as perf_analyzer does): its
// input's name, datatype and shape and its output's name from the model metadata, and from them
// how an image file becomes the request's input: the encoded file as a BYTES element, or an FP32
// tensor decoded and preprocessed on the client (NCHW or NHWC, as the shape says).
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "accel/image/preprocess.h"
#include "client/kserve/kserve_codec.h"
#include "client/kserve/kserve_transport.h"
#include "tessera/v1/classifier.pb.h"

namespace tessera::client::kserve {

struct ModelPlanOptions {
  std::string model;    // "" = the first READY model of the repository index
  std::string version;  // "" = the server's choice
  // "auto": BYTES when the model's input is BYTES or the server is tesserad (whose models all
  // take encoded images), FP32 when the input is FP32; "bytes" or "fp32" to choose.
  std::string input_format = "auto";
  // FP32: a tessera model folder whose model.toml [input] says how to scale and normalise; "" =
  // pixel / 255, stretched to the input's size.
  std::string preprocess_dir;
};

struct ModelPlan {
  std::string server;  // ServerMetadata's name
  std::string model;
  std::string version;
  std::string input_name;
  std::string datatype;         // what the client sends: "BYTES" or "FP32"
  std::vector<int64_t> shape;   // what the client sends (the metadata's, -1 read as 1)
  bool nhwc = false;            // FP32: channels last
  PreprocessConfig preprocess;  // FP32: image -> tensor
  std::string output_name;
};

// Asks the server (name, the model when not given, its metadata) and decides the input's form.
// Transport errors keep their code; a model the client cannot feed is FAILED_PRECONDITION.
grpc::Status plan_model(KserveTransport& transport, const ModelPlanOptions& options, ModelPlan& plan);

// The request's input for one encoded image file.
Result<InputTensor> make_input(const ModelPlan& plan, const std::string& image);

// An answer in tessera.v1's shape (no timing: KServe answers carry none), so the commands print
// both protocols' results alike.
v1::ClassifyResponse to_classify_response(const InferAnswer& answer);

}  // namespace tessera::client::kserve
