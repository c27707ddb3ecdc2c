// `tessera bench --protocol kserve`: ModelInfer over gRPC (callback API) or HTTP (worker threads,
// one kept-alive connection each), or ModelStreamInfer with N streams (--mode stream).
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "client/commands/bench_senders.h"
#include "client/commands/bench_stream.h"
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

// ModelStreamInfer: answers matched by id (an answer without a known id, as an error may come,
// goes to the oldest request).
BenchStreamProtocol<inference::ModelInferRequest, inference::ModelStreamInferResponse> kserve_stream_protocol(
    inference::GRPCInferenceService::Stub& stub, std::string output) {
  return {
      .start =
          [&stub](grpc::ClientContext* context,
                  grpc::ClientBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>* reactor) {
            stub.async()->ModelStreamInfer(context, reactor);
          },
      .request_id = [](const inference::ModelInferRequest& request) { return request.id(); },
      .answer_id = [](const inference::ModelStreamInferResponse& response) { return response.infer_response().id(); },
      .unknown_id_is_oldest = true,
      .deliver =
          [output = std::move(output)](const inference::ModelStreamInferResponse& response, BenchDone& done) {
            if (!response.error_message().empty()) {
              return done(grpc::Status(grpc::StatusCode::UNKNOWN, response.error_message()), nullptr);
            }
            auto answer = kserve::grpc_answer(response.infer_response(), output);
            if (!answer) return done(to_grpc(answer.status()), nullptr);
            const v1::ClassifyResponse classified = kserve::to_classify_response(*answer);
            done(grpc::Status::OK, &classified);
          },
  };
}

class KserveStreamSender : public BenchSender {
 public:
  KserveStreamSender(const Connection& connection, std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
                     kserve::ModelPlan plan, unsigned streams)
      : stub_(inference::GRPCInferenceService::NewStub(std::move(channel))),
        options_(std::move(options)),
        plan_(std::move(plan)),
        streams_(connection, kserve_stream_protocol(*stub_, plan_.output_name), streams) {}

  bool send(unsigned slot, const std::string& request_id, const BenchImage& image, BenchDone done) override {
    return streams_.send(slot, kserve::grpc_request(make_spec(plan_, options_, request_id, image)), done);
  }

  bool finish(std::chrono::steady_clock::time_point deadline) override { return streams_.finish(deadline); }

 private:
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  BenchCallOptions options_;
  kserve::ModelPlan plan_;
  BenchStreams<inference::ModelInferRequest, inference::ModelStreamInferResponse> streams_;
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
