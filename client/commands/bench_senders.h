// How `tessera bench` puts requests on the wire: unary Classify calls, or ClassifyStream with N
// streams (gRPC callback-API clients; answers come back on gRPC's threads); or KServe v2's
// ModelInfer, over gRPC (callback API too) or HTTP (a thread and a kept-alive connection per
// request in flight).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "client/commands/common.h"
#include "client/kserve/kserve_model.h"

namespace tessera::client {

// One image file, read whole; for KServe also the request input made of it (kserve::make_input).
struct BenchImage {
  std::string path;
  std::string bytes;
  kserve::InputTensor input;
};

// Called once per request with its status and, when OK, the response.
using BenchDone = std::function<void(const grpc::Status& status, const v1::ClassifyResponse* response)>;

class BenchSender {
 public:
  virtual ~BenchSender() = default;
  // Sends `image` on `slot` (unary: ignored; stream: the stream slot % N). `done` runs exactly
  // once, never inside send(). False (and `done` never runs) when the slot's stream has ended.
  virtual bool send(unsigned slot, const std::string& request_id, const BenchImage& image, BenchDone done) = 0;
  // Ends the calls in flight: streams are half-closed and awaited until `deadline`, then
  // cancelled. Returns false when something still did not finish.
  virtual bool finish(std::chrono::steady_clock::time_point deadline) = 0;
  // True when answers come only from poll() (a completion queue the load's own thread drives):
  // the load then polls where it would wait, and no thread hands an answer to another.
  virtual bool polled() const { return false; }
  // Runs the `done` of answers that have arrived, waiting for one until `deadline`.
  virtual void poll(std::chrono::steady_clock::time_point /*deadline*/) {}
};

struct BenchCallOptions {
  std::string model;
  unsigned top_k = 1;
  std::chrono::microseconds timeout{10'000'000};  // per unary call
};

// Unary Classify on gRPC's callback API: answers on gRPC's threads.
std::unique_ptr<BenchSender> make_unary_sender(const Connection& connection, std::shared_ptr<grpc::Channel> channel,
                                               BenchCallOptions options);
// Unary Classify on a completion queue of its own, which the load's thread polls (polled()).
std::unique_ptr<BenchSender> make_unary_queue_sender(const Connection& connection,
                                                     std::shared_ptr<grpc::Channel> channel, BenchCallOptions options);
// KServe: ModelInfer asking `plan`'s output for the top options.top_k classes. The answers come to
// `done` in tessera.v1's shape without timing.
std::unique_ptr<BenchSender> make_kserve_grpc_sender(const Connection& connection,
                                                     std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
                                                     kserve::ModelPlan plan);
// KServe --mode stream: ModelStreamInfer with `streams` streams.
std::unique_ptr<BenchSender> make_kserve_stream_sender(const Connection& connection,
                                                       std::shared_ptr<grpc::Channel> channel, BenchCallOptions options,
                                                       kserve::ModelPlan plan, unsigned streams);
// `connections`: requests in flight at most (one thread and connection each); more wait in a queue.
std::unique_ptr<BenchSender> make_kserve_http_sender(const Connection& connection, kserve::HttpTensorFormat format,
                                                     BenchCallOptions options, kserve::ModelPlan plan,
                                                     unsigned connections);
std::unique_ptr<BenchSender> make_stream_sender(const Connection& connection, std::shared_ptr<grpc::Channel> channel,
                                                BenchCallOptions options, unsigned streams);

}  // namespace tessera::client
