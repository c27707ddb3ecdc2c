// `tessera bench --protocol kserve`: ModelInfer over gRPC (callback API) or HTTP (worker threads,
// one kept-alive connection each), or ModelStreamInfer with N streams (--mode stream).
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "client/commands/bench_senders.h"
#include "client/kserve/kserve_transport.h"

namespace tessera::client {
namespace {

kserve::InferSpec make_spec(const kserve::ModelPlan& plan, const BenchCallOptions& options,
                            const std::string& request_id, const BenchImage& image) {
  return {plan.model, plan.version, request_id, image.input, plan.output_name, options.top_k};
}

grpc::Status to_grpc(const Status& status) { return {static_cast<grpc::StatusCode>(status.code()), status.message()}; }

class KserveGrpcSender : public BenchSender {
 public:
  KserveGrpcSender(const Connection& connection, std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
                   kserve::ModelPlan plan)
      : connection_(connection),
        stub_(inference::GRPCInferenceService::NewStub(std::move(channel))),
        options_(std::move(options)),
        plan_(std::move(plan)) {}

  bool send(unsigned, const std::string& request_id, const BenchImage& image, BenchDone done) override {
    auto* call = new Call;
    prepare_context(call->context, connection_, options_.timeout);
    call->request = kserve::grpc_request(make_spec(plan_, options_, request_id, image));
    call->done = std::move(done);
    stub_->async()->ModelInfer(&call->context, &call->request, &call->response,
                               [call, output = plan_.output_name](const grpc::Status& status) {
                                 std::unique_ptr<Call> owned(call);
                                 if (!status.ok()) return owned->done(status, nullptr);
                                 auto answer = kserve::grpc_answer(owned->response, output);
                                 if (!answer) return owned->done(to_grpc(answer.status()), nullptr);
                                 const v1::ClassifyResponse response = kserve::to_classify_response(*answer);
                                 owned->done(grpc::Status::OK, &response);
                               });
    return true;
  }

  // Unary calls end by themselves (each has a deadline).
  bool finish(std::chrono::steady_clock::time_point) override { return true; }

 private:
  struct Call {
    grpc::ClientContext context;
    inference::ModelInferRequest request;
    inference::ModelInferResponse response;
    BenchDone done;
  };
  Connection connection_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  BenchCallOptions options_;
  kserve::ModelPlan plan_;
};

// One ModelStreamInfer: one write in flight at a time, a read always pending, answers matched to
// their requests by id (an answer without a known id, as an error may come, goes to the oldest).
class KserveStream : public grpc::ClientBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse> {
 public:
  KserveStream(inference::GRPCInferenceService::Stub& stub, const Connection& connection, std::string output)
      : output_(std::move(output)) {
    prepare_context(context_, connection, std::chrono::microseconds(0));
    stub.async()->ModelStreamInfer(&context_, this);
    StartRead(&response_);
    StartCall();
  }

  bool send(inference::ModelInferRequest request, BenchDone& done) {
    std::lock_guard lock(mu_);
    if (ended_ || broken_ || closing_) return false;
    pending_.emplace_back(request.id(), std::move(done));
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
    const inference::ModelStreamInferResponse response = std::move(response_);
    response_.Clear();
    BenchDone done = take(response.infer_response().id());
    StartRead(&response_);
    if (!done) return;  // an answer to no request of ours: ignored
    if (!response.error_message().empty()) {
      return done(grpc::Status(grpc::StatusCode::UNKNOWN, response.error_message()), nullptr);
    }
    auto answer = kserve::grpc_answer(response.infer_response(), output_);
    if (!answer) return done(to_grpc(answer.status()), nullptr);
    const v1::ClassifyResponse classified = kserve::to_classify_response(*answer);
    done(grpc::Status::OK, &classified);
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
  // The callback of request `id`, else of the oldest request; removed from the pending list.
  BenchDone take(const std::string& id) {
    std::lock_guard lock(mu_);
    if (pending_.empty()) return nullptr;
    auto it = pending_.begin();
    for (auto i = pending_.begin(); i != pending_.end(); ++i) {
      if (i->first == id) {
        it = i;
        break;
      }
    }
    BenchDone done = std::move(it->second);
    pending_.erase(it);
    return done;
  }

  const std::string output_;
  grpc::ClientContext context_;
  inference::ModelStreamInferResponse response_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<inference::ModelInferRequest> writes_;
  std::list<std::pair<std::string, BenchDone>> pending_;  // in the order sent
  bool writing_ = false;
  bool closing_ = false;
  bool broken_ = false;
  bool ended_ = false;     // OnDone began
  bool finished_ = false;  // OnDone is over: the stream may be freed
};

class KserveStreamSender : public BenchSender {
 public:
  KserveStreamSender(const Connection& connection, std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
                     kserve::ModelPlan plan, unsigned streams)
      : stub_(inference::GRPCInferenceService::NewStub(std::move(channel))),
        options_(std::move(options)),
        plan_(std::move(plan)) {
    for (unsigned i = 0; i < std::max(1u, streams); ++i)
      streams_.push_back(new KserveStream(*stub_, connection, plan_.output_name));
  }

  ~KserveStreamSender() override {
    // A stream is freed only after OnDone; one that never finished is leaked rather than freed
    // under gRPC's feet (the process is about to exit).
    for (KserveStream* s : streams_) {
      if (s->wait(std::chrono::steady_clock::now())) delete s;
    }
  }

  bool send(unsigned slot, const std::string& request_id, const BenchImage& image, BenchDone done) override {
    return streams_[slot % streams_.size()]->send(kserve::grpc_request(make_spec(plan_, options_, request_id, image)),
                                                  done);
  }

  bool finish(std::chrono::steady_clock::time_point deadline) override {
    for (KserveStream* s : streams_) s->close();
    bool all = true;
    for (KserveStream* s : streams_) all = s->wait(deadline) && all;
    if (!all) {
      for (KserveStream* s : streams_) s->cancel();
      for (KserveStream* s : streams_) s->wait(std::chrono::steady_clock::now() + std::chrono::seconds(5));
    }
    return all;
  }

 private:
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  BenchCallOptions options_;
  kserve::ModelPlan plan_;
  std::vector<KserveStream*> streams_;
};

// Requests wait in a queue for one of `connections` threads, each with its own connection.
class KserveHttpSender : public BenchSender {
 public:
  KserveHttpSender(const Connection& connection, kserve::HttpTensorFormat format, BenchCallOptions options,
                   kserve::ModelPlan plan, unsigned connections)
      : options_(std::move(options)), plan_(std::move(plan)) {
    for (unsigned i = 0; i < std::max(1u, connections); ++i) {
      threads_.emplace_back([this, transport = std::shared_ptr<kserve::KserveTransport>(
                                       kserve::make_http_transport(connection, format))] { work(*transport); });
    }
  }

  ~KserveHttpSender() override { stop(); }

  bool send(unsigned, const std::string& request_id, const BenchImage& image, BenchDone done) override {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    jobs_.push_back({make_spec(plan_, options_, request_id, image), std::move(done)});
    cv_.notify_one();
    return true;
  }

  // Waits for the queue to empty and the requests in flight to end (each has a deadline).
  bool finish(std::chrono::steady_clock::time_point deadline) override {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return jobs_.empty() && busy_ == 0; });
  }

 private:
  struct Job {
    kserve::InferSpec spec;
    BenchDone done;
  };

  void work(kserve::KserveTransport& transport) {
    while (true) {
      Job job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
        ++busy_;
      }
      kserve::InferAnswer answer;
      const grpc::Status status = transport.infer(job.spec, options_.timeout, answer);
      if (status.ok()) {
        const v1::ClassifyResponse response = kserve::to_classify_response(answer);
        job.done(status, &response);
      } else {
        job.done(status, nullptr);
      }
      std::lock_guard lock(mu_);
      --busy_;
      cv_.notify_all();
    }
  }

  // Ends the threads once the queue is empty.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
  }

  BenchCallOptions options_;
  kserve::ModelPlan plan_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  unsigned busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: they start once the members above are set
};

}  // namespace

std::unique_ptr<BenchSender> make_kserve_grpc_sender(const Connection& connection,
                                                     std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
                                                     kserve::ModelPlan plan) {
  return std::make_unique<KserveGrpcSender>(connection, std::move(channel), std::move(options), std::move(plan));
}

std::unique_ptr<BenchSender> make_kserve_stream_sender(const Connection& connection,
                                                       std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
                                                       kserve::ModelPlan plan, unsigned streams) {
  return std::make_unique<KserveStreamSender>(connection, std::move(channel), std::move(options), std::move(plan),
                                              streams);
}

std::unique_ptr<BenchSender> make_kserve_http_sender(const Connection& connection, kserve::HttpTensorFormat format,
                                                     BenchCallOptions options, kserve::ModelPlan plan,
                                                     unsigned connections) {
  return std::make_unique<KserveHttpSender>(connection, format, std::move(options), std::move(plan), connections);
}

}  // namespace tessera::client
