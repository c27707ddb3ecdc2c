// tessera.v1's unary Classify on gRPC's async API. gRPC 1.51's callback API runs every callback
// on the "nexting" threads of one shared completion queue (epoll1 has no background poller):
// each event wakes one of them and that one wakes another to poll, ~8 context switches a call in
// the daemon where this door makes ~4. Here each of `threads` completion queues has one thread of
// its own, which polls and then runs the handler itself: admission, decode and (an idle daemon,
// delay 0) the model run and Finish. A queue shared by two threads woke as often as the callback
// API did (measured), so it is one thread a queue. A thread takes its next call only once its
// handler has returned, so a call waits behind a busy thread only when every thread is busy.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/grpc/queue_door.h"
#include "tessera/v1/classifier.grpc.pb.h"

namespace tessera {

class Admission;

// tessera.v1.Classifier with Classify on the async API and every other method on the callback API.
using ClassifierBase = v1::Classifier::WithAsyncMethod_Classify<
    v1::Classifier::WithCallbackMethod_ClassifyStream<v1::Classifier::WithCallbackMethod_ListModels<
        v1::Classifier::WithCallbackMethod_GetModelIndex<v1::Classifier::WithCallbackMethod_LoadModel<
            v1::Classifier::WithCallbackMethod_UnloadModel<v1::Classifier::Service>>>>>>;

class ClassifyUnaryDoor final : public GrpcQueueDoor {
 public:
  // `service` and `admission` must outlive the door; `threads` queues, one thread each.
  ClassifyUnaryDoor(ClassifierBase& service, Admission& admission, unsigned threads);
  ~ClassifyUnaryDoor() override;

  void add_queues(grpc::ServerBuilder& builder) override;
  void start_polling() override;
  void stop_polling() override;

 private:
  struct Call;
  struct Tag;
  // Asks gRPC for the next Classify on `queue` (a new Call).
  void request_call(grpc::ServerCompletionQueue& queue);
  // One queue's thread: its events until the queue is shut down and drained.
  void poll(grpc::ServerCompletionQueue& queue);
  // A call has arrived: admission, then the job (which may run here and answer at once).
  void handle(Call& call);
  // What keeps the door open: a pending request (which becomes its call's hold until Finish is
  // called) and a running handler. stop_polling shuts the queues only once nothing holds them,
  // so no Finish or request ever starts on a queue that is shut down.
  void hold();
  void release();

  ClassifierBase& service_;
  Admission& admission_;
  const unsigned thread_count_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable answered_cv_;
  size_t open_ = 0;  // holds: pending requests, calls not yet finished, running handlers
  bool stopped_ = false;
};

}  // namespace tessera
