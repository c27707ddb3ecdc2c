#include "server/batching/input_stage.h"

#include <exception>
#include <string>
#include <vector>

#include "accel/image/preprocess.h"
#include "server/models/model_repository.h"

namespace tessera {
namespace {

size_t floats_of(const PreprocessConfig& input) {
  return static_cast<size_t>(input.channels) * static_cast<size_t>(input.height) * static_cast<size_t>(input.width);
}

// Decodes (no larger than the model's resize needs: a JPEG scaled, a PNG far larger refused) and
// preprocesses an encoded image or pixels into `out`; checks an input tensor's size.
Status prepare_input(const JobInput& job_input, const PreprocessConfig& input, const DecodeLimits& limits,
                     std::vector<float>& out) {
  const size_t slot = floats_of(input);
  if (const auto* tensor = std::get_if<InputTensor>(&job_input)) {
    if (tensor->values.size() != slot) {
      return Status::invalid_argument("the input tensor has " + std::to_string(tensor->values.size()) +
                                      " elements; the model takes " + std::to_string(slot));
    }
    return Status::ok();
  }
  out.resize(slot);
  if (const auto* pixels = std::get_if<DecodedPixels>(&job_input)) {
    return preprocess_into(*pixels->image, input, out.data());
  }
  DecodeLimits sized = limits;
  sized.target_width = input.width;
  sized.target_height = input.height;
  auto image = decode_image(std::get<EncodedImage>(job_input).bytes, input.channels, sized);
  return image ? preprocess_into(*image, input, out.data()) : image.status();
}

}  // namespace

size_t input_floats(const ServedModel& model) { return floats_of(model.config().input); }

bool input_ready(const InferenceJob& job) {
  if (!job.model) return false;
  const size_t slot = input_floats(*job.model);
  if (const auto* tensor = std::get_if<InputTensor>(&job.input)) return tensor->values.size() == slot;
  return job.prepared.size() == slot;
}

Status InputStage::check_size(const JobInput& input, std::string_view input_name) const {
  const auto* image = std::get_if<EncodedImage>(&input);
  if (image == nullptr) return Status::ok();
  const size_t size = image->bytes.size();
  if (size == 0) return Status::invalid_argument(std::string(input_name) + " is empty");
  if (static_cast<int64_t>(size) > limits_.max_bytes) {
    return Status::invalid_argument(std::string(input_name) + " is " + std::to_string(size) + " bytes; the limit is " +
                                    std::to_string(limits_.max_bytes));
  }
  return Status::ok();
}

Status InputStage::prepare(InferenceJob& job) {
  if (!job.model) return Status::internal("the job has no model");
  const auto start = SteadyClock::now();
  Status status;
  try {
    status = prepare_input(job.input, job.model->config().input, limits_, job.prepared);
  } catch (const std::exception& e) {
    status = Status::internal(std::string("decode: ") + e.what());
  }
  if (!status.is_ok()) job.prepared.clear();  // nothing half-made passes for a ready input
  job.prepare_time = SteadyClock::now() - start;
  prepared_.fetch_add(1, std::memory_order_relaxed);
  return status;
}

}  // namespace tessera
