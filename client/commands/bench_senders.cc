#include "client/commands/bench_senders.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "client/commands/bench_stream.h"

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

// ClassifyStream: answers matched by request_id (an answer with another id is ignored), an
// error answer carries its code.
BenchStreamProtocol<v1::ClassifyRequest, v1::ClassifyResponse> classify_stream_protocol(v1::Classifier::Stub& stub) {
  return {
      .start =
          [&stub](grpc::ClientContext* context,
                  grpc::ClientBidiReactor<v1::ClassifyRequest, v1::ClassifyResponse>* reactor) {
            stub.async()->ClassifyStream(context, reactor);
          },
      .request_id = [](const v1::ClassifyRequest& request) { return request.request_id(); },
      .answer_id = [](const v1::ClassifyResponse& response) { return response.request_id(); },
      .unknown_id_is_oldest = false,
      .deliver =
          [](const v1::ClassifyResponse& response, BenchDone& done) {
            if (response.error().empty() && response.error_code() == 0) {
              done(grpc::Status::OK, &response);
            } else {
              done(grpc::Status(static_cast<grpc::StatusCode>(response.error_code()), response.error()), nullptr);
            }
          },
  };
}

class StreamSender : public BenchSender {
 public:
  StreamSender(const Connection& connection, std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
               unsigned streams)
      : channel_(std::move(channel)),
        stub_(v1::Classifier::NewStub(channel_)),
        options_(std::move(options)),
        streams_(connection, classify_stream_protocol(*stub_), streams) {}

  bool send(unsigned slot, const std::string& request_id, const BenchImage& image, BenchDone done) override {
    v1::ClassifyRequest request;
    request.set_model(options_.model);
    request.set_image(image.bytes);
    request.set_top_k(options_.top_k);
    request.set_request_id(request_id);
    return streams_.send(slot, std::move(request), done);
  }

  bool finish(std::chrono::steady_clock::time_point deadline) override { return streams_.finish(deadline); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
  BenchCallOptions options_;
  BenchStreams<v1::ClassifyRequest, v1::ClassifyResponse> streams_;
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
