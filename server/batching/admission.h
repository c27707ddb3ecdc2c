// The admission step: every door that classifies (gRPC Classify and ClassifyStream, KServe
// ModelInfer over gRPC and REST, POST /v1/classify) reads its own wire form into an
// AdmissionRequest, and Admission turns it into queued work or a typed refusal, in one order:
//   1. the request id: the caller's when usable, else a fresh one (request_id.h); an unusable
//      one is refused (INVALID_ARGUMENT) or replaced, as the protocol says;
//   2. the model: NOT_FOUND when there is none of that name ("" is the default model) or it has
//      no such version (INVALID_ARGUMENT for a version that is not a number), unless the door
//      already resolved it (KServe decodes tensors against the version's signature);
//   3. what the door could not read of top-k or the input (its Status, as the door said it);
//   4. each encoded image: not empty, at most the byte limit (INVALID_ARGUMENT; input_stage.h);
//   5. an in-flight slot (UNAVAILABLE once the daemon drains), so shutdown waits for the answer.
// submit() then runs the input stage (input_stage.h: decode and preprocess, on the submitting
// thread, after asking the queue whether it would take the job) and hands the job to the queue.
// A request of several images (KServe's batch dimension) is admitted as a group: one id, one slot,
// one statistics record, answered once, in order; each image is its own job, which the batcher may
// batch with other callers' images.
// Every refusal is logged here, once ("grpc 3f9a0c21-7 model=m bytes=0 failed: ..."), naming the
// model as the caller named it until it is found, then by its own name; the queue logs the rest.
// A request's figures are recorded here, once: in its model version's statistics
// (server/models/model_statistics.h) as a success with its stages or a failure (a refusal once
// the model is known, an answer without a result), with the time since the door `received` it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"
#include "server/batching/in_flight.h"
#include "server/batching/inference_job.h"
#include "server/batching/input_stage.h"

namespace tessera {

class InferenceQueue;
class ModelRepository;
class ModelStatistics;
struct ServedModel;

// What a protocol does with a request id it cannot use.
enum class RequestIdRule {
  kRefuse,   // tessera.v1: INVALID_ARGUMENT (logged under a fresh id)
  kReplace,  // KServe: a fresh id for the logs; the response still echoes the caller's
};

// A request as its door read it.
struct AdmissionRequest {
  const char* via = "";  // "grpc", "grpc-stream", "http", "kserve-grpc", "kserve-http"
  std::string model;     // as the caller named it; "" is the default model
  std::string version;   // the model version the caller named; "" is the newest served
  // The version the door already resolved (KServe decodes tensors against its signature):
  // admission runs the request on it rather than resolving again, so the answer names the version
  // that served it even when a load swaps versions meanwhile. Null: admission resolves.
  std::shared_ptr<const ServedModel> resolved;
  std::string request_id;  // as the caller gave it; "" when none
  RequestIdRule id_rule = RequestIdRule::kRefuse;
  std::string_view id_name = "request_id";  // what a refusal calls the id
  // 0 is the default; more than the model's classes is capped. Or why the door could not read it.
  Result<uint64_t> top_k = uint64_t{0};
  // Or why the door could not read an input.
  Result<JobInput> input = Status::invalid_argument("no input");
  std::string_view input_name = "image";  // what a refusal calls an encoded image
  size_t bytes = 0;                       // what the request brought, for the log
  SteadyClock::time_point received = SteadyClock::now();
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
  std::function<bool()> cancelled;
  // False for the messages of a stream, which holds one slot for the whole stream.
  bool takes_slot = true;
};

// What admission answers: the id the request goes by (also when refused) and its job (all but
// `done`), or the refusal. A job that took an in-flight slot holds it until submitted and
// answered, or until this is destroyed unsubmitted.
class Admitted {
 public:
  Admitted(std::string request_id, Result<InferenceJob> job, InFlightTracker* slot = nullptr);
  ~Admitted();
  Admitted(Admitted&& other) noexcept;
  Admitted& operator=(Admitted&&) = delete;
  Admitted(const Admitted&) = delete;
  Admitted& operator=(const Admitted&) = delete;

  const std::string& request_id() const { return request_id_; }
  explicit operator bool() const { return job_.is_ok(); }
  const Status& status() const { return job_.status(); }
  // The job; only when admitted.
  InferenceJob* operator->() { return &job_.value(); }

 private:
  friend class Admission;
  std::string request_id_;
  Result<InferenceJob> job_;
  InFlightTracker* slot_ = nullptr;  // the slot to give back, null when none is held
};

// A request of several images as admission answers it: the id it goes by (also when refused) and
// a job per image (all but `done`), or the refusal. It holds the request's one in-flight slot, if
// it took one, until submitted and answered, or until destroyed unsubmitted.
class AdmittedGroup {
 public:
  AdmittedGroup(std::string request_id, Status status, std::vector<InferenceJob> jobs = {},
                InFlightTracker* slot = nullptr);
  ~AdmittedGroup();
  AdmittedGroup(AdmittedGroup&& other) noexcept;
  AdmittedGroup& operator=(AdmittedGroup&&) = delete;
  AdmittedGroup(const AdmittedGroup&) = delete;
  AdmittedGroup& operator=(const AdmittedGroup&) = delete;

  const std::string& request_id() const { return request_id_; }
  explicit operator bool() const { return status_.is_ok(); }
  const Status& status() const { return status_; }
  size_t size() const { return jobs_.size(); }

 private:
  friend class Admission;
  std::string request_id_;
  Status status_;
  std::vector<InferenceJob> jobs_;
  InFlightTracker* slot_ = nullptr;
};

// A group's answer: each image's result in request order, or the error of the first image (in
// request order) that failed: one failed image fails the request.
using GroupDone = std::function<void(Result<std::vector<ClassifyResult>>)>;

class Admission {
 public:
  // `limits` bound the input stage (limits.max_bytes: each encoded image). All must outlive the
  // Admission.
  Admission(const ModelRepository& models, InferenceQueue& queue, InFlightTracker& in_flight, DecodeLimits limits);

  // Checks the request in the order above and makes its job, taking an in-flight slot.
  Admitted admit(AdmissionRequest request);

  // The group form: `inputs` are the request's images (request.input is not read). Checks the
  // request in the order above (step 4 for each image; none is INVALID_ARGUMENT) and makes a job
  // per image, taking one in-flight slot for them all.
  AdmittedGroup admit_group(AdmissionRequest request, std::vector<JobInput> inputs);

  // A request its door refuses for what only the door can check (a malformed query string; a
  // KServe model version or body that does not decode): refused with `status` under the id
  // admit() would have given it, and logged the same way. An unusable id (kRefuse) is refused
  // first, as admit() would.
  Admitted refuse(const AdmissionRequest& request, Status status);

  // Runs the input stage on an admitted job (its `done` set by the door) and hands it to the
  // queue; its slot, if it holds one, is given back once `done` has run. The model version's
  // statistics record the request's success or failure just before `done` runs. Returns the
  // queue's ticket (InferenceQueue::submit), 0 when already answered (a full queue, an image
  // that does not decode, or run on this thread: inference_queue.h).
  uint64_t submit(Admitted admitted);

  // Submits each job of an admitted group as submit() does; `done` runs once, on the thread of the
  // last image's answer, after the request is recorded, and before its slot is given back.
  void submit_group(AdmittedGroup group, GroupDone done);

  InFlightTracker& in_flight() { return in_flight_; }
  const InputStage& input_stage() const { return input_; }

 private:
  // Step 1: the id the request goes by; an error when an unusable id is refused.
  Status resolve_request_id(const AdmissionRequest& request, std::string& request_id) const;
  // Steps 1 to 5 for `inputs` (each a job; or why the door could not read them): the id the
  // request goes by and its jobs, or the refusal (logged, and counted once the model is known);
  // `slot` set when one was taken.
  Result<std::vector<InferenceJob>> admit_inputs(AdmissionRequest& request, Result<std::vector<JobInput>> inputs,
                                                 std::string& request_id, InFlightTracker*& slot);
  // Logs the refusal; `served`, when known, counts it as a failed request.
  Status refused(const AdmissionRequest& request, const std::string& request_id, std::string_view model, Status status,
                 const ServedModel* served = nullptr) const;
  // The input stage, then the queue; a job either refuses is answered through the queue.
  uint64_t enqueue(InferenceJob job);

  const ModelRepository& models_;
  InferenceQueue& queue_;
  InFlightTracker& in_flight_;
  InputStage input_;
};

}  // namespace tessera
