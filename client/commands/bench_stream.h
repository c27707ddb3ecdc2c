// The bench's bidirectional stream, for both streaming RPCs (tessera.v1 ClassifyStream,
// bench_senders.cc; KServe's ModelStreamInfer, bench_kserve_senders.cc): one write in flight at
// a time (as the reactor API wants), a read always pending, answers matched to their callbacks by
// request id. BenchStreams spreads a sender's requests over N such streams.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "client/commands/bench_senders.h"
#include "client/commands/common.h"

namespace tessera::client {

// What differs between the two streams: how the call starts, a request's and an answer's id, and
// how an answer reaches its callback.
template <class Request, class Response>
struct BenchStreamProtocol {
  std::function<void(grpc::ClientContext*, grpc::ClientBidiReactor<Request, Response>*)> start;
  std::function<std::string(const Request&)> request_id;
  std::function<std::string(const Response&)> answer_id;
  // An answer whose id names no request of ours: the oldest request's (KServe: an error may come
  // without the id), else ignored.
  bool unknown_id_is_oldest = false;
  std::function<void(const Response&, BenchDone&)> deliver;
};

template <class Request, class Response>
class BenchStream : public grpc::ClientBidiReactor<Request, Response> {
 public:
  BenchStream(const Connection& connection, BenchStreamProtocol<Request, Response> protocol)
      : protocol_(std::move(protocol)) {
    prepare_context(context_, connection, std::chrono::microseconds(0));
    protocol_.start(&context_, this);
    this->StartRead(&response_);
    this->StartCall();
  }

  // Returns false (and keeps `done`) when the stream already ended.
  bool send(Request request, BenchDone& done) {
    std::lock_guard lock(mu_);
    if (ended_ || broken_ || closing_) return false;
    pending_.emplace_back(protocol_.request_id(request), std::move(done));
    writes_.push_back(std::move(request));
    if (!writing_) {
      writing_ = true;
      this->StartWrite(&writes_.front());
    }
    return true;
  }

  void close() {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = true;
    // A stream that already ended (the server refused it: OnDone ran) takes no more operations.
    if (!writing_ && !broken_ && !ended_) this->StartWritesDone();
  }

  void cancel() { context_.TryCancel(); }

  bool wait(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return finished_; });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    writes_.pop_front();
    if (!ok) {
      broken_ = true;  // the stream is over; OnDone fails whatever is pending
      writing_ = false;
      return;
    }
    if (!writes_.empty()) {
      this->StartWrite(&writes_.front());
      return;
    }
    writing_ = false;
    if (closing_) this->StartWritesDone();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    const Response response = std::move(response_);
    response_.Clear();
    BenchDone done = take(protocol_.answer_id(response));
    this->StartRead(&response_);
    if (!done) return;  // an answer to no request of ours: ignored
    protocol_.deliver(response, done);
  }

  void OnDone(const grpc::Status& status) override {
    std::list<std::pair<std::string, BenchDone>> pending;
    {
      std::lock_guard lock(mu_);
      ended_ = true;  // from here on send() and close() leave the stream alone
      pending.swap(pending_);
    }
    const grpc::Status failed =
        status.ok() ? grpc::Status(grpc::StatusCode::UNKNOWN, "stream ended without an answer") : status;
    for (auto& entry : pending) entry.second(failed, nullptr);
    std::lock_guard lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }

 private:
  // The callback of request `id` (else the oldest's, when the protocol says so), taken off the list.
  BenchDone take(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& entry) { return entry.first == id; });
    if (it == pending_.end() && protocol_.unknown_id_is_oldest) it = pending_.begin();
    if (it == pending_.end()) return nullptr;
    BenchDone done = std::move(it->second);
    pending_.erase(it);
    return done;
  }

  const BenchStreamProtocol<Request, Response> protocol_;
  grpc::ClientContext context_;
  Response response_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> writes_;
  std::list<std::pair<std::string, BenchDone>> pending_;  // in the order sent
  bool writing_ = false;
  bool closing_ = false;
  bool broken_ = false;
  bool ended_ = false;     // OnDone began
  bool finished_ = false;  // OnDone is over: the stream may be freed
};

// N streams of one sender; a request goes to stream (slot mod N).
template <class Request, class Response>
class BenchStreams {
 public:
  BenchStreams(const Connection& connection, const BenchStreamProtocol<Request, Response>& protocol, unsigned streams) {
    for (unsigned i = 0; i < std::max(1u, streams); ++i) {
      streams_.push_back(new BenchStream<Request, Response>(connection, protocol));
    }
  }

  ~BenchStreams() {
    // A stream is freed only after OnDone; one that never finished is leaked rather than freed
    // under gRPC's feet (the process is about to exit).
    for (auto* s : streams_) {
      if (s->wait(std::chrono::steady_clock::now())) delete s;
    }
  }

  BenchStreams(const BenchStreams&) = delete;
  BenchStreams& operator=(const BenchStreams&) = delete;

  bool send(unsigned slot, Request request, BenchDone& done) {
    return streams_[slot % streams_.size()]->send(std::move(request), done);
  }

  // Half-closes every stream and waits for them to end; past `deadline` they are cancelled.
  bool finish(std::chrono::steady_clock::time_point deadline) {
    for (auto* s : streams_) s->close();
    bool all = true;
    for (auto* s : streams_) all = s->wait(deadline) && all;
    if (!all) {
      for (auto* s : streams_) s->cancel();
      for (auto* s : streams_) s->wait(std::chrono::steady_clock::now() + std::chrono::seconds(5));
    }
    return all;
  }

 private:
  std::vector<BenchStream<Request, Response>*> streams_;
};

}  // namespace tessera::client
