#include "tests/integration/kserve_client.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "accel/image/image.h"
#include "accel/image/preprocess.h"
#include "accel/runtime/model_config.h"
#include "tests/integration/fmnist_images.h"

namespace tessera::testing {
namespace fs = std::filesystem;

std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_stub(const TesseradProcess& daemon) {
  return inference::GRPCInferenceService::NewStub(
      grpc::CreateChannel(daemon.grpc_address(), grpc::InsecureChannelCredentials()));
}

KserveAnswer kserve_infer(inference::GRPCInferenceService::Stub& stub, const inference::ModelInferRequest& request,
                          std::chrono::milliseconds deadline) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  KserveAnswer answer;
  answer.status = stub.ModelInfer(&context, request, &answer.response);
  return answer;
}

inference::ModelInferRequest bytes_request(const std::string& image, bool raw, const std::string& model) {
  inference::ModelInferRequest request;
  request.set_model_name(model);
  auto* input = request.add_inputs();
  input->set_name("image");
  input->set_datatype("BYTES");
  input->add_shape(1);
  if (raw) {
    std::string element(4, '\0');
    const auto n = static_cast<uint32_t>(image.size());
    for (int i = 0; i < 4; ++i) element[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    request.add_raw_input_contents(element + image);
  } else {
    input->mutable_contents()->add_bytes_contents(image);
  }
  return request;
}

std::vector<float> output_floats(const inference::ModelInferResponse& response, int index) {
  if (index < response.raw_output_contents_size()) {
    const std::string& raw = response.raw_output_contents(index);
    std::vector<float> out(raw.size() / 4);
    std::memcpy(out.data(), raw.data(), out.size() * 4);  // little-endian host
    return out;
  }
  if (index >= response.outputs_size()) return {};
  const auto& c = response.outputs(index).contents().fp32_contents();
  return {c.begin(), c.end()};
}

std::vector<std::string> output_strings(const inference::ModelInferResponse& response, int index) {
  std::vector<std::string> out;
  if (index < response.raw_output_contents_size()) {
    const std::string& raw = response.raw_output_contents(index);
    size_t pos = 0;
    while (pos + 4 <= raw.size()) {
      uint32_t n = 0;
      for (int i = 0; i < 4; ++i)
        n |= uint32_t{static_cast<unsigned char>(raw[pos + static_cast<size_t>(i)])} << (8 * i);
      pos += 4;
      if (n > raw.size() - pos) throw std::runtime_error("BYTES element runs past the end");
      out.push_back(raw.substr(pos, n));
      pos += n;
    }
    if (pos != raw.size()) throw std::runtime_error("trailing bytes after the BYTES elements");
    return out;
  }
  if (index >= response.outputs_size()) return out;
  const auto& c = response.outputs(index).contents().bytes_contents();
  return {c.begin(), c.end()};
}

int argmax(const std::vector<float>& values) {
  if (values.empty()) return -1;
  return static_cast<int>(std::max_element(values.begin(), values.end()) - values.begin());
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

namespace {

Image decode(const std::string& encoded) {
  auto image = decode_image({reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size()}, 1);
  if (!image) throw std::runtime_error("test image does not decode: " + image.status().to_string());
  return std::move(image).value();
}

}  // namespace

std::vector<float> preprocessed_input(const std::string& encoded) {
  auto config = load_model_config(bundled_models_dir() / kFmnistModel);
  if (!config) throw std::runtime_error(config.status().to_string());
  auto tensor = preprocess(decode(encoded), config->input);
  if (!tensor) throw std::runtime_error(tensor.status().to_string());
  return tensor->data;
}

std::vector<uint8_t> decoded_gray_pixels(const std::string& encoded, int* width, int* height) {
  Image image = decode(encoded);
  *width = image.width;
  *height = image.height;
  return image.pixels;
}

ModelsCopy::ModelsCopy(int max_batch, int max_queue_delay_us, int max_queue) {
  root_ = fs::temp_directory_path() /
          ("tessera-kserve-models-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
  const fs::path dir = root_ / kFmnistModel;
  fs::create_directories(root_);
  fs::copy(bundled_models_dir() / kFmnistModel, dir, fs::copy_options::recursive);
  std::ifstream in(dir / "model.toml");
  std::stringstream text;
  text << in.rdbuf();
  in.close();
  // Drop a [batching] table (it would be the file's last), then write ours.
  std::string toml = text.str();
  const size_t table = toml.find("\n[batching]");
  if (table != std::string::npos) toml.erase(table + 1);
  toml += "[batching]\nmax_batch = " + std::to_string(max_batch) +
          "\nmax_queue_delay_us = " + std::to_string(max_queue_delay_us) +
          "\nmax_queue = " + std::to_string(max_queue) + "\n";
  std::ofstream(dir / "model.toml", std::ios::trunc) << toml;
}

ModelsCopy::~ModelsCopy() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

}  // namespace tessera::testing
