// One image to classify, as the admission step (admission.h) hands it to the InferenceQueue.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "server/batching/classify_result.h"

namespace tessera {

struct ServedModel;

using SteadyClock = std::chrono::steady_clock;

// A caller's deadline on the system clock (gRPC's) as a queue deadline on the steady clock;
// none stays none.
inline SteadyClock::time_point steady_deadline(std::chrono::system_clock::time_point deadline) {
  if (deadline == std::chrono::system_clock::time_point::max()) return SteadyClock::time_point::max();
  return SteadyClock::now() +
         std::chrono::duration_cast<SteadyClock::duration>(deadline - std::chrono::system_clock::now());
}

// Receives a job's result, or the Status saying why there is none.
using InferenceCallback = std::function<void(Result<ClassifyResult>)>;

// A job's input, in one of three forms. Each is a view: the submitter keeps what it points at
// alive until the job's `done` has run.
// An encoded image (JPEG or PNG file), decoded and preprocessed by the input stage (input_stage.h).
struct EncodedImage {
  std::span<const uint8_t> bytes;
};
// The model's input as is: C*H*W floats, NCHW, already preprocessed (KServe FP32 tensors).
struct InputTensor {
  std::span<const float> values;
};
// Pixels the caller already decoded (KServe UINT8 tensors), preprocessed like a decoded image.
struct DecodedPixels {
  const Image* image = nullptr;
};
using JobInput = std::variant<EncodedImage, InputTensor, DecodedPixels>;

// The bytes an input brought, for the logs.
size_t input_bytes(const JobInput& input);

struct InferenceJob {
  // The model version it runs on, kept alive until the job is answered (an unload does not cut it).
  std::shared_ptr<const ServedModel> model;
  JobInput input;
  int top_k = kDefaultTopK;
  std::string request_id;
  const char* via = "";  // "grpc", "grpc-stream", "http", "kserve-grpc", "kserve-http": for logs and metrics
  SteadyClock::time_point received = SteadyClock::now();
  // A job still queued at its deadline is answered DEADLINE_EXCEEDED instead of run.
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
  // True once the caller has gone away; such a job is answered CANCELLED instead of run.
  std::function<bool()> cancelled;
  InferenceCallback done;
  // Whether an idle queue may run it on the submitter's thread (inference_queue.h). False for
  // the jobs of a request that carries several images: they should reach the workers together.
  bool may_run_inline = true;
  // Set by the input stage (input_stage.h) on the submitting thread, before the job is queued: an
  // encoded image or pixels decoded and preprocessed into the model's C*H*W floats (empty for an
  // InputTensor, which is already that), and how long it took. The batch only gathers them.
  std::vector<float> prepared;
  SteadyClock::duration prepare_time{0};
};

}  // namespace tessera
