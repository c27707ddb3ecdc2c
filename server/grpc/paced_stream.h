// The paced bidirectional stream both streaming RPCs share (ClassifyStream, classify_stream.h;
// KServe's ModelStreamInfer, kserve_stream_infer.h): reads requests as they come, hands each to
// its subclass's submit() (which gives it to the batcher, so a stream's requests batch with each
// other and with other callers'), and writes each answer as it finishes. At most
// kMaxPendingPerStream requests of one stream are in the batcher or answered and not yet written
// at once: reading pauses until an answer is written, so a client that sends and never reads is
// held back by HTTP/2 flow control instead of growing the daemon's memory. The stream holds one
// in-flight slot for its whole life (without one, the server drains, it ends at once,
// UNAVAILABLE). It ends OK once the client half-closed and every answer is written; a cancel
// drops what is still queued and ends, CANCELLED, when the batcher has answered it all.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>

#include "server/batching/in_flight.h"
#include "server/grpc/tsan_handoff.h"

namespace tessera {

inline constexpr size_t kMaxPendingPerStream = 32;

template <class Request, class Answer>
class PacedStream : public grpc::ServerBidiReactor<Request, Answer> {
 public:
  void OnReadDone(bool ok) final {
    back_from_grpc(this);
    Request request;
    {
      std::lock_guard lock(mu_);
      read_in_flight_ = false;
      if (!ok) {
        reads_done_ = true;  // the client half-closed (or the call broke)
      } else {
        request.Swap(&reading_);
      }
    }
    if (ok) submit(std::move(request));
    step(std::unique_lock(mu_));
  }

  void OnWriteDone(bool ok) final {
    back_from_grpc(this);
    std::unique_lock lock(mu_);
    write_in_flight_ = false;
    if (!ok) break_off();  // the client is gone
    step(std::move(lock));
  }

  void OnCancel() final {
    back_from_grpc(this);
    std::unique_lock lock(mu_);
    break_off();
    step(std::move(lock));
  }

  void OnDone() final {
    back_from_grpc(this);
    if (holds_slot_) in_flight_.end();
    delete this;
  }

 protected:
  explicit PacedStream(InFlightTracker& in_flight) : in_flight_(in_flight) {}
  ~PacedStream() override = default;

  // Takes the stream's slot and starts reading; the subclass's constructor calls it last.
  void start() {
    holds_slot_ = in_flight_.try_begin();
    if (!holds_slot_) {
      finished_ = true;
      handed_to_grpc(this);
      this->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
      return;
    }
    step(std::unique_lock(mu_));
  }

  // One request read: submit it (call expect_answer() first) or answer its error at once.
  virtual void submit(Request request) = 0;

  // A request goes to the batcher: its answer counts as pending until answered(..., true).
  void expect_answer() {
    std::lock_guard lock(mu_);
    ++pending_;
  }

  // Queues an answer (unless the stream broke); `was_pending`: it answers an expect_answer().
  void answered(Answer answer, bool was_pending) {
    std::unique_lock lock(mu_);
    if (was_pending) --pending_;
    if (!broken_) answers_.push_back(std::move(answer));
    // From submit() OnReadDone steps after; from the batcher's thread this is the only step, taken
    // under the same lock: once it is released the reactor may finish and be deleted.
    if (was_pending) step(std::move(lock));
  }

 private:
  // A write failed or the call was cancelled: no more reads, and answers are dropped (under mu_).
  void break_off() {
    broken_ = true;
    reads_done_ = true;
    answers_.clear();
  }

  // Starts the next write, a read, or the finish, whichever is due: decided under `lock` (held
  // since the change that made it due), acted on after it, touching nothing of the reactor then
  // but the calls it decided (gRPC may run reactions on other threads at once).
  void step(std::unique_lock<std::mutex> lock) {
    bool write = false, read = false, finish = false, cancelled = false;
    {
      const std::unique_lock held = std::move(lock);
      if (finished_) return;
      if (!write_in_flight_ && !answers_.empty()) {
        writing_ = std::move(answers_.front());
        answers_.pop_front();
        write_in_flight_ = write = true;
      }
      // Unsent answers count with the requests in the batcher: a client that does not read stops
      // the reading here, and its own writes then stall on flow control.
      if (!read_in_flight_ && !reads_done_ && pending_ + answers_.size() < kMaxPendingPerStream) {
        reading_.Clear();
        read_in_flight_ = read = true;
      }
      if (reads_done_ && pending_ == 0 && !read_in_flight_ && !write_in_flight_ && answers_.empty()) {
        finished_ = finish = true;
        cancelled = broken_;
      }
    }
    // A started write may be done (on another thread) before the read starts: each start is its
    // own hand-over, with nothing of this reactor read after it.
    if (write) {
      handed_to_grpc(this);
      this->StartWrite(&writing_);
    }
    if (read) {
      handed_to_grpc(this);
      this->StartRead(&reading_);
    }
    if (finish) {
      grpc::Status status =
          cancelled ? grpc::Status(grpc::StatusCode::CANCELLED, "the stream was cancelled") : grpc::Status::OK;
      handed_to_grpc(this);
      this->Finish(std::move(status));
    }
  }

  InFlightTracker& in_flight_;
  bool holds_slot_ = false;

  std::mutex mu_;
  Request reading_;             // target of the read in progress
  std::deque<Answer> answers_;  // waiting to be written (with pending_, bounded)
  Answer writing_;              // the write in progress
  size_t pending_ = 0;          // submitted to the batcher, not yet answered
  bool read_in_flight_ = false;
  bool write_in_flight_ = false;
  bool reads_done_ = false;  // half-closed, cancelled or a read failed
  bool broken_ = false;      // a write failed or the call was cancelled: drop answers
  bool finished_ = false;
};

}  // namespace tessera
