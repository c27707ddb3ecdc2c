// The admission step: every door that classifies (gRPC Classify and ClassifyStream, KServe
// ModelInfer over gRPC and REST, POST /v1/classify) reads its own wire form into an
// AdmissionRequest, and Admission turns it into an InferenceJob or a typed refusal, in one order:
//   1. the request id: the caller's when usable, else a fresh one (request_id.h); an unusable
//      one is refused (INVALID_ARGUMENT) or replaced, as the protocol says;
//   2. the model: NOT_FOUND when there is none of that name ("" is the default model) or it has
//      no such version (INVALID_ARGUMENT for a version that is not a number);
//   3. what the door could not read of top-k or the input (its Status, as the door said it);
//   4. an encoded image: not empty, at most the byte limit (INVALID_ARGUMENT);
//   5. an in-flight slot (UNAVAILABLE once the daemon drains), so shutdown waits for the answer.
// Every refusal is logged here, once ("grpc 3f9a0c21-7 model=m bytes=0 failed: ..."), naming the
// model as the caller named it until it is found, then by its own name; the queue logs the rest.
// A refusal of a request whose model version is served counts as a failed request in that
// version's statistics (server/models/model_statistics.h), as does a job answered without a result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "accel/common/status.h"
#include "server/batching/in_flight.h"
#include "server/batching/inference_job.h"

namespace tessera {

class InferenceQueue;
class ModelRepository;
class ModelStatistics;
struct ServedModel;

// Records one request in a model version's statistics: a success with its result's stages, or a
// failure; both with the time since it was `received`. For a door that records a request of
// several jobs itself (AdmissionRequest::records_statistics false), once all are answered.
void record_request(ModelStatistics& statistics, SteadyClock::time_point received,
                    const Result<ClassifyResult>& result);

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
  // False for each job of a request that carries several images: its door records the request
  // once, when all are answered (ServedModel::statistics, record_success / record_failure).
  bool records_statistics = true;
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

class Admission {
 public:
  // `max_image_bytes` bounds encoded images. All must outlive the Admission.
  Admission(const ModelRepository& models, InferenceQueue& queue, InFlightTracker& in_flight, int64_t max_image_bytes);

  // Checks the request in the order above and makes its job, taking an in-flight slot.
  Admitted admit(AdmissionRequest request);

  // A request its door refuses for what only the door can check (a malformed query string; a
  // KServe model version or body that does not decode): refused with `status` under the id
  // admit() would have given it, and logged the same way. An unusable id (kRefuse) is refused
  // first, as admit() would.
  Admitted refuse(const AdmissionRequest& request, Status status);

  // Hands an admitted job (its `done` set by the door) to the queue; its slot, if it holds one,
  // is given back once `done` has run. The model version's statistics record the request's
  // success or failure just before `done` runs (unless the door records it itself). Returns the
  // queue's ticket (InferenceQueue::submit).
  uint64_t submit(Admitted admitted);

  InFlightTracker& in_flight() { return in_flight_; }
  InferenceQueue& queue() { return queue_; }

 private:
  // Step 1: the id the request goes by; an error when an unusable id is refused.
  Status resolve_request_id(const AdmissionRequest& request, std::string& request_id) const;
  // Step 4.
  Status check_input(const AdmissionRequest& request, const JobInput& input) const;
  // Logs the refusal and makes the answer; `served`, when known, counts it as a failed request.
  Admitted refused(const AdmissionRequest& request, std::string request_id, std::string_view model, Status status,
                   const ServedModel* served = nullptr) const;

  const ModelRepository& models_;
  InferenceQueue& queue_;
  InFlightTracker& in_flight_;
  const int64_t max_image_bytes_;
};

}  // namespace tessera
