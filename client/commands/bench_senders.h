// How `tessera bench` puts requests on the wire: unary Classify calls, or ClassifyStream with N
// streams. Both are gRPC callback-API clients; answers come back on gRPC's threads.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "client/commands/common.h"

namespace tessera::client {

// Called once per request with its status and, when OK, the response.
using BenchDone = std::function<void(const grpc::Status& status, const v1::ClassifyResponse* response)>;

class BenchSender {
 public:
  virtual ~BenchSender() = default;
  // Sends `image` on `slot` (unary: ignored; stream: the stream slot % N). `done` runs exactly
  // once, never inside send(). False (and `done` never runs) when the slot's stream has ended.
  virtual bool send(unsigned slot, const std::string& request_id, const std::string& image, BenchDone done) = 0;
  // Ends the calls in flight: streams are half-closed and awaited until `deadline`, then
  // cancelled. Returns false when something still did not finish.
  virtual bool finish(std::chrono::steady_clock::time_point deadline) = 0;
};

struct BenchCallOptions {
  std::string model;
  unsigned top_k = 1;
  std::chrono::microseconds timeout{10'000'000};  // per unary call
};

std::unique_ptr<BenchSender> make_unary_sender(const Connection& connection, std::shared_ptr<grpc::Channel> channel,
                                               BenchCallOptions options);
std::unique_ptr<BenchSender> make_stream_sender(const Connection& connection, std::shared_ptr<grpc::Channel> channel,
                                                BenchCallOptions options, unsigned streams);

}  // namespace tessera::client
