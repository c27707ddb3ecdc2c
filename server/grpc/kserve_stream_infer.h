// ModelStreamInfer (Triton's streaming extension of the KServe v2 gRPC service; tritonclient's
// start_stream / async_stream_infer): a bidirectional stream of ModelInferRequests, each answered
// by one ModelStreamInferResponse, in the order the answers finish, matched by the request's id:
// the ModelInferResponse, or error_message for a request that failed (the stream goes on). Its
// pattern and bounds are ClassifyStream's (server/grpc/classify_stream.h): it holds one in-flight
// slot for the whole stream, reads the next request only while fewer than kMaxPendingPerStream
// are in the batcher or answered and unsent, ends OK once the client half-closed and every
// answer is written, and a cancel drops what is still queued and ends when all is answered.
#pragma once

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>
#include <mutex>

#include "kserve/grpc_predict_v2.grpc.pb.h"

namespace tessera {
class Admission;
class ModelRepository;
}  // namespace tessera

namespace tessera::kserve {

class SharedMemoryRegistry;

class StreamInferReactor final
    : public grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse> {
 public:
  // Without a slot (the server drains) the stream ends at once, UNAVAILABLE. `shm`: the system
  // shared-memory regions tensors may name (null: none).
  StreamInferReactor(ModelRepository& models, Admission& admission, const SharedMemoryRegistry* shm,
                     grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Decodes and submits `request`, or queues its error answer.
  void submit(const inference::ModelInferRequest& request);
  // Queues an answer (unless the stream broke) and, when it answers a submitted request, counts
  // that one off.
  void add_answer(inference::ModelStreamInferResponse answer, bool was_pending);
  // Starts the next write, a read, or the finish, whichever is due: decided under `lock` (held
  // since the change that made it due), acted on after it, touching nothing of the reactor then
  // but the calls it decided.
  void step(std::unique_lock<std::mutex> lock);

  ModelRepository& models_;
  Admission& admission_;
  const SharedMemoryRegistry* shm_;
  grpc::CallbackServerContext* context_;
  bool holds_slot_ = false;

  std::mutex mu_;
  inference::ModelInferRequest reading_;                     // target of the read in progress
  std::deque<inference::ModelStreamInferResponse> answers_;  // waiting to be written (with pending_, bounded)
  inference::ModelStreamInferResponse writing_;              // the write in progress
  size_t pending_ = 0;                                       // submitted to the batcher, not yet answered
  bool read_in_flight_ = false;
  bool write_in_flight_ = false;
  bool reads_done_ = false;  // half-closed, cancelled or a read failed
  bool broken_ = false;      // a write failed or the call was cancelled: drop answers
  bool finished_ = false;
};

}  // namespace tessera::kserve
