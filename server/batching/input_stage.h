// The input stage: what admission does to a job's input before the queue sees it. An encoded image
// (JPEG, PNG) is checked against the byte limit, decoded no larger than the model's resize needs
// and preprocessed into the model's C*H*W floats; pixels a caller decoded are preprocessed; an
// input tensor is checked against the model's size. It runs on the thread that admits the request,
// so a bad image fails that request alone, before it is queued, and a batch never waits for its
// images' decodes: the queue (inference_queue.h) only batches what is ready. Bounded by
// DecodeLimits: an encoded image past max_bytes is refused unread, one whose header promises more
// pixels than the limits allow is refused before its pixels are decoded (accel/image/image.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "server/batching/inference_job.h"

namespace tessera {

class InputStage {
 public:
  explicit InputStage(DecodeLimits limits) : limits_(limits) {}

  // An encoded image's size: not empty, at most limits().max_bytes (INVALID_ARGUMENT, naming the
  // input as `input_name`). Other inputs are checked against their model by prepare().
  Status check_size(const JobInput& input, std::string_view input_name) const;

  // Makes job.prepared the model's C*H*W floats (empty for an InputTensor, which is already that,
  // once its size is checked) and sets job.prepare_time. INVALID_ARGUMENT for an image that does
  // not decode or a tensor of the wrong size; never throws.
  Status prepare(InferenceJob& job);

  const DecodeLimits& limits() const { return limits_; }
  // Inputs prepare() has worked on so far, whatever came of them.
  uint64_t prepared() const { return prepared_.load(std::memory_order_relaxed); }

 private:
  const DecodeLimits limits_;
  std::atomic<uint64_t> prepared_{0};
};

// The model's input floats of one image (C*H*W).
size_t input_floats(const ServedModel& model);

// Whether `job`'s input is ready for a batch: prepared, or a tensor of the model's size.
bool input_ready(const InferenceJob& job);

}  // namespace tessera
