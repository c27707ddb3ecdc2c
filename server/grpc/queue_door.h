// A door served on completion queues of its own (gRPC's async API) rather than on the callback
// API's shared threads. GrpcServer drives its life: queues taken before the server is built,
// polling started once it runs, stopped once the server is shut down and every call finished.
#pragma once

#include <grpcpp/grpcpp.h>

namespace tessera {

class GrpcQueueDoor {
 public:
  virtual ~GrpcQueueDoor() = default;
  // Before BuildAndStart: takes the door's completion queues from `builder`.
  virtual void add_queues(grpc::ServerBuilder& builder) = 0;
  // After BuildAndStart: requests the first calls and starts the polling threads.
  virtual void start_polling() = 0;
  // After grpc::Server::Shutdown: waits until every call it took is finished (the batcher has
  // answered them all), shuts its queues down and joins its threads. Also when never started.
  virtual void stop_polling() = 0;
};

}  // namespace tessera
