// Client-side helpers for the KServe v2 tests: building ModelInferRequests, reading responses,
// base64, and preprocessing an image the way the bundled model's config says (to send tensors).
// Written independently of server/kserve/ so the tests do not check the codec against itself.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "kserve/grpc_predict_v2.grpc.pb.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {

inline constexpr const char* kFmnistModel = "fashion-mnist";
// Its KServe v2 HTTP infer path.
inline const std::string kFmnistInferPath = "/v2/models/fashion-mnist/infer";

std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_stub(const TesseradProcess& daemon);

struct KserveAnswer {
  grpc::Status status;
  inference::ModelInferResponse response;
};

// One ModelInfer call with a deadline (20 s unless given).
KserveAnswer kserve_infer(inference::GRPCInferenceService::Stub& stub, const inference::ModelInferRequest& request,
                          std::chrono::milliseconds deadline = std::chrono::milliseconds(20000));

// A request with one BYTES input [1] holding `image`, in contents.bytes_contents or (raw = true)
// raw_input_contents.
inference::ModelInferRequest bytes_request(const std::string& image, bool raw = false,
                                           const std::string& model = kFmnistModel);

// Output `index` of a response as floats / strings, read from raw_output_contents or contents.
std::vector<float> output_floats(const inference::ModelInferResponse& response, int index = 0);
std::vector<std::string> output_strings(const inference::ModelInferResponse& response, int index = 0);

int argmax(const std::vector<float>& values);

std::string base64(const std::string& bytes);

// The bundled model's input for an encoded image: decoded and preprocessed client-side with the
// model's [input] config (C*H*W floats), or only decoded (H*W*C pixels, 1 channel).
std::vector<float> preprocessed_input(const std::string& encoded);
std::vector<uint8_t> decoded_gray_pixels(const std::string& encoded, int* width, int* height);

// A copy of the bundled model repository whose model.toml [batching] is replaced, removed with
// the object.
class ModelsCopy {
 public:
  ModelsCopy(int max_batch, int max_queue_delay_us, int max_queue);
  ~ModelsCopy();
  const std::filesystem::path& path() const { return root_; }

 private:
  std::filesystem::path root_;
};

}  // namespace tessera::testing
