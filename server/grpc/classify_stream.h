// ClassifyStream's reactor: reads requests as they come, hands each to the batcher (so a
// stream's images batch with each other and with other callers'), and writes each answer as it
// finishes, tagged with its request id. At most kMaxPendingPerStream requests of one stream are
// in the batcher or answered and not yet written at once: reading pauses until an answer is
// written, so a client that sends and never reads is held back by HTTP/2 flow control instead
// of growing the daemon's memory.
// Ends OK once the client half-closed and every answer is written; a cancelled stream drops
// what is still queued and ends when the batcher has answered it all.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <deque>
#include <list>
#include <memory>
#include <mutex>

#include "tessera/v1/classifier.grpc.pb.h"

namespace tessera {

class Admission;

inline constexpr size_t kMaxPendingPerStream = 32;

class ClassifyStreamReactor final : public grpc::ServerBidiReactor<v1::ClassifyRequest, v1::ClassifyResponse> {
 public:
  // Each message goes through `admission` (without a slot of its own: the stream holds one
  // until it is done). Without a slot (the server drains) the stream ends at once, UNAVAILABLE.
  ClassifyStreamReactor(Admission& admission, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Submits `request` (if admission lets it in) or queues its error answer.
  void submit(std::unique_ptr<v1::ClassifyRequest> request);
  // Starts the next write, a read, or the finish, whichever is due.
  void step();

  Admission& admission_;
  grpc::CallbackServerContext* context_;
  bool holds_slot_ = false;  // false: refused (draining); the stream ended at once

  std::mutex mu_;
  std::unique_ptr<v1::ClassifyRequest> reading_;              // target of the read in progress
  std::list<std::unique_ptr<v1::ClassifyRequest>> requests_;  // submitted, kept until answered
  std::deque<v1::ClassifyResponse> answers_;                  // waiting to be written (with pending_, bounded)
  v1::ClassifyResponse writing_;                              // the write in progress
  size_t pending_ = 0;                                        // submitted to the batcher, not yet answered
  bool read_in_flight_ = false;
  bool write_in_flight_ = false;
  bool reads_done_ = false;  // half-closed, cancelled or a read failed
  bool broken_ = false;      // a write failed or the call was cancelled: drop answers
  bool finished_ = false;
};

}  // namespace tessera
