#include "client/commands/bench_senders.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace tessera::client {
namespace {

// A unary Classify call's context (credentials, deadline) and request, as both unary senders send it.
void prepare_classify(grpc::ClientContext& context, v1::ClassifyRequest& request, const Connection& connection,
                      const BenchCallOptions& options, const std::string& request_id, const BenchImage& image) {
  prepare_context(context, connection, options.timeout);
  request.set_model(options.model);
  request.set_image(image.bytes);
  request.set_top_k(options.top_k);
  request.set_request_id(request_id);
}

class UnarySender : public BenchSender {
 public:
  UnarySender(const Connection& connection, std::shared_ptr<grpc::Channel> channel, BenchCallOptions options)
      : connection_(connection),
        channel_(std::move(channel)),
        stub_(v1::Classifier::NewStub(channel_)),
        options_(std::move(options)) {}

  bool send(unsigned, const std::string& request_id, const BenchImage& image, BenchDone done) override {
    auto* call = new Call;
    prepare_classify(call->context, call->request, connection_, options_, request_id, image);
    call->done = std::move(done);
    stub_->async()->Classify(&call->context, &call->request, &call->response, [call](const grpc::Status& status) {
      std::unique_ptr<Call> owned(call);
      owned->done(status, status.ok() ? &owned->response : nullptr);
    });
    return true;
  }

  // Unary calls end by themselves (each has a deadline); the caller waits for their callbacks.
  bool finish(std::chrono::steady_clock::time_point) override { return true; }

 private:
  struct Call {
    grpc::ClientContext context;
    v1::ClassifyRequest request;
    v1::ClassifyResponse response;
    BenchDone done;
  };
  Connection connection_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
  BenchCallOptions options_;
};

// Unary calls on a completion queue that only poll() drives: the answer runs on the thread that
// sends the next request (as Triton's perf_analyzer does), so the bench adds no hand-off of its
// own between gRPC's thread and the sender's.
class UnaryQueueSender : public BenchSender {
 public:
  UnaryQueueSender(const Connection& connection, std::shared_ptr<grpc::Channel> channel, BenchCallOptions options)
      : connection_(connection),
        channel_(std::move(channel)),
        stub_(v1::Classifier::NewStub(channel_)),
        options_(std::move(options)) {}

  ~UnaryQueueSender() override {
    // Calls still in flight (the drain timed out) are cancelled and their tags drained.
    for (Call* call : calls_) call->context.TryCancel();
    queue_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (queue_.Next(&tag, &ok)) delete static_cast<Call*>(tag);
  }

  bool send(unsigned, const std::string& request_id, const BenchImage& image, BenchDone done) override {
    auto* call = new Call;
    prepare_classify(call->context, call->request, connection_, options_, request_id, image);
    call->done = std::move(done);
    call->reader = stub_->AsyncClassify(&call->context, call->request, &queue_);
    call->reader->Finish(&call->response, &call->status, call);
    calls_.insert(call);
    return true;
  }

  bool finish(std::chrono::steady_clock::time_point) override { return true; }
  bool polled() const override { return true; }

  void poll(std::chrono::steady_clock::time_point deadline) override {
    void* tag = nullptr;
    bool ok = false;
    // gRPC takes system_clock deadlines only.
    const auto until = std::chrono::system_clock::now() + std::max(deadline - std::chrono::steady_clock::now(),
                                                                   std::chrono::steady_clock::duration::zero());
    if (queue_.AsyncNext(&tag, &ok, until) != grpc::CompletionQueue::GOT_EVENT) return;
    std::unique_ptr<Call> call(static_cast<Call*>(tag));
    calls_.erase(call.get());
    // A unary Finish tag always comes back ok; its status says how the call went.
    call->done(call->status, call->status.ok() ? &call->response : nullptr);
  }

 private:
  struct Call {
    grpc::ClientContext context;
    v1::ClassifyRequest request;
    v1::ClassifyResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<v1::ClassifyResponse>> reader;
    BenchDone done;
  };
  Connection connection_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
  BenchCallOptions options_;
  grpc::CompletionQueue queue_;
  std::set<Call*> calls_;  // in flight; send() and poll() run on the load's one thread
};

// One ClassifyStream: a write queue (one write in flight at a time, as the reactor API wants),
// a read always pending, answers matched to their callbacks by request_id.
class BenchStream : public grpc::ClientBidiReactor<v1::ClassifyRequest, v1::ClassifyResponse> {
 public:
  BenchStream(v1::Classifier::Stub& stub, const Connection& connection) {
    prepare_context(context_, connection, std::chrono::microseconds(0));
    stub.async()->ClassifyStream(&context_, this);
    StartRead(&response_);
    StartCall();
  }

  // Returns false (and keeps `done`) when the stream already ended.
  bool send(v1::ClassifyRequest request, BenchDone& done) {
    std::lock_guard lock(mu_);
    if (ended_ || broken_ || closing_) return false;
    pending_.emplace(request.request_id(), std::move(done));
    writes_.push_back(std::move(request));
    if (!writing_) {
      writing_ = true;
      StartWrite(&writes_.front());
    }
    return true;
  }

  void close() {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = true;
    // A stream that already ended (the server refused it: OnDone ran) takes no more operations.
    if (!writing_ && !broken_ && !ended_) StartWritesDone();
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
      StartWrite(&writes_.front());
      return;
    }
    writing_ = false;
    if (closing_) StartWritesDone();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    v1::ClassifyResponse response = std::move(response_);
    response_.Clear();
    BenchDone done;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(response.request_id());
      if (it != pending_.end()) {
        done = std::move(it->second);
        pending_.erase(it);
      }
    }
    StartRead(&response_);
    if (!done) return;  // an answer to no request of ours: ignored
    if (response.error().empty() && response.error_code() == 0) {
      done(grpc::Status::OK, &response);
    } else {
      done(grpc::Status(static_cast<grpc::StatusCode>(response.error_code()), response.error()), nullptr);
    }
  }

  void OnDone(const grpc::Status& status) override {
    std::map<std::string, BenchDone> pending;
    {
      std::lock_guard lock(mu_);
      ended_ = true;  // from here on send() and close() leave the stream alone
      pending.swap(pending_);
    }
    const grpc::Status failed =
        status.ok() ? grpc::Status(grpc::StatusCode::UNKNOWN, "stream ended without an answer") : status;
    for (auto& [id, done] : pending) done(failed, nullptr);
    std::lock_guard lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }

 private:
  grpc::ClientContext context_;
  v1::ClassifyResponse response_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::ClassifyRequest> writes_;
  std::map<std::string, BenchDone> pending_;
  bool writing_ = false;
  bool closing_ = false;
  bool broken_ = false;
  bool ended_ = false;     // OnDone began
  bool finished_ = false;  // OnDone is over: the stream may be freed
};

class StreamSender : public BenchSender {
 public:
  StreamSender(const Connection& connection, std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
               unsigned streams)
      : channel_(std::move(channel)), stub_(v1::Classifier::NewStub(channel_)), options_(std::move(options)) {
    for (unsigned i = 0; i < std::max(1u, streams); ++i) streams_.push_back(new BenchStream(*stub_, connection));
  }

  ~StreamSender() override {
    // A stream is freed only after OnDone; one that never finished is leaked rather than freed
    // under gRPC's feet (the process is about to exit).
    for (BenchStream* s : streams_) {
      if (s->wait(std::chrono::steady_clock::now())) delete s;
    }
  }

  bool send(unsigned slot, const std::string& request_id, const BenchImage& image, BenchDone done) override {
    v1::ClassifyRequest request;
    request.set_model(options_.model);
    request.set_image(image.bytes);
    request.set_top_k(options_.top_k);
    request.set_request_id(request_id);
    return streams_[slot % streams_.size()]->send(std::move(request), done);
  }

  bool finish(std::chrono::steady_clock::time_point deadline) override {
    for (BenchStream* s : streams_) s->close();
    bool all = true;
    for (BenchStream* s : streams_) all = s->wait(deadline) && all;
    if (!all) {
      for (BenchStream* s : streams_) s->cancel();
      for (BenchStream* s : streams_) s->wait(std::chrono::steady_clock::now() + std::chrono::seconds(5));
    }
    return all;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
  BenchCallOptions options_;
  std::vector<BenchStream*> streams_;
};

}  // namespace

std::unique_ptr<BenchSender> make_unary_sender(const Connection& connection, std::shared_ptr<grpc::Channel> channel,
                                               BenchCallOptions options) {
  return std::make_unique<UnarySender>(connection, std::move(channel), std::move(options));
}

std::unique_ptr<BenchSender> make_unary_queue_sender(const Connection& connection,
                                                     std::shared_ptr<grpc::Channel> channel, BenchCallOptions options) {
  return std::make_unique<UnaryQueueSender>(connection, std::move(channel), std::move(options));
}

std::unique_ptr<BenchSender> make_stream_sender(const Connection& connection, std::shared_ptr<grpc::Channel> channel,
                                                BenchCallOptions options, unsigned streams) {
  return std::make_unique<StreamSender>(connection, std::move(channel), std::move(options), streams);
}

}  // namespace tessera::client
