// An InferenceQueue job's answer as a future, for the batching tests.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <utility>

#include "server/batching/inference_queue.h"
#include "server/batching/input_stage.h"

namespace tessera {

// Submits `job` (its `done` replaced; its input made ready as admission's input stage does, if it
// is not yet) and returns its answer's future; *ticket gets the queue's ticket (0 when answered).
inline std::future<Result<ClassifyResult>> submit_for_answer(InferenceQueue& queue, InferenceJob job,
                                                             uint64_t* ticket = nullptr) {
  static InputStage stage{DecodeLimits{}};
  auto promise = std::make_shared<std::promise<Result<ClassifyResult>>>();
  if (!input_ready(job)) {
    if (Status prepared = stage.prepare(job); !prepared.is_ok()) {
      promise->set_value(prepared);
      if (ticket) *ticket = 0;
      return promise->get_future();
    }
  }
  job.done = [promise](Result<ClassifyResult> r) { promise->set_value(std::move(r)); };
  const uint64_t t = queue.submit(std::move(job));
  if (ticket) *ticket = t;
  return promise->get_future();
}

// The answer, or an internal error after 30 s (a test never hangs on a lost job).
inline Result<ClassifyResult> wait_answer(std::future<Result<ClassifyResult>>& f) {
  if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) return Status::internal("no answer in 30 s");
  return f.get();
}

}  // namespace tessera
