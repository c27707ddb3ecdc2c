#include "server/grpc/classify_unary.h"

#include <algorithm>
#include <utility>

#include "server/batching/admission.h"
#include "server/grpc/classify_messages.h"
#include "server/grpc/status_mapping.h"
#include "server/grpc/tsan_handoff.h"
#include "server/models/model_repository.h"

namespace tessera {
namespace {

// What a tag on a door's queue stands for.
enum class Event { kArrived, kFinished, kDone };

}  // namespace

struct ClassifyUnaryDoor::Tag {
  Call* call;
  Event event;
};

// One Classify call, from its request to its last tag. Freed on its queue's thread once both the
// Finish tag and the AsyncNotifyWhenDone tag are back (gRPC delivers both for every started call).
struct ClassifyUnaryDoor::Call {
  grpc::ServerContext context;
  v1::ClassifyRequest request;
  v1::ClassifyResponse response;
  grpc::ServerAsyncResponseWriter<v1::ClassifyResponse> writer{&context};
  Tag arrived{this, Event::kArrived};
  Tag finished{this, Event::kFinished};
  Tag done{this, Event::kDone};
  int tags_due = 0;  // finished + done still to come; only the queue's thread touches it
};

ClassifyUnaryDoor::ClassifyUnaryDoor(ClassifierBase& service, Admission& admission, unsigned threads)
    : service_(service), admission_(admission), thread_count_(std::max(1u, threads)) {}

ClassifyUnaryDoor::~ClassifyUnaryDoor() { stop_polling(); }

void ClassifyUnaryDoor::add_queues(grpc::ServerBuilder& builder) {
  for (unsigned i = 0; i < thread_count_; ++i) queues_.push_back(builder.AddCompletionQueue());
}

void ClassifyUnaryDoor::start_polling() {
  for (auto& queue : queues_) {
    request_call(*queue);
    threads_.emplace_back([this, q = queue.get()] { poll(*q); });
  }
}

void ClassifyUnaryDoor::stop_polling() {
  {
    std::unique_lock lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    // After the server's shutdown every pending request comes back refused; the calls taken are
    // answered by the batcher (the daemon stops its queue first, which answers what is left).
    answered_cv_.wait(lock, [&] { return open_ == 0; });
  }
  for (auto& queue : queues_) queue->Shutdown();
  for (std::thread& thread : threads_) thread.join();
  if (threads_.empty()) {
    // Never polled (the server did not start): drain the queues before they are destroyed.
    void* tag = nullptr;
    bool ok = false;
    for (auto& queue : queues_) {
      while (queue->Next(&tag, &ok)) {}
    }
  }
  threads_.clear();
}

void ClassifyUnaryDoor::hold() {
  std::lock_guard lock(mu_);
  ++open_;
}

void ClassifyUnaryDoor::release() {
  bool last;
  {
    std::lock_guard lock(mu_);
    last = --open_ == 0;
  }
  if (last) answered_cv_.notify_all();
}

void ClassifyUnaryDoor::request_call(grpc::ServerCompletionQueue& queue) {
  hold();  // the request's hold, which becomes the call's once it arrives
  auto* call = new Call;
  call->context.AsyncNotifyWhenDone(&call->done);
  handed_to_grpc(call);
  service_.RequestClassify(&call->context, &call->request, &call->writer, &queue, &queue, &call->arrived);
}

void ClassifyUnaryDoor::poll(grpc::ServerCompletionQueue& queue) {
  void* raw = nullptr;
  bool ok = false;
  while (queue.Next(&raw, &ok)) {
    const Tag& tag = *static_cast<Tag*>(raw);
    Call* call = tag.call;
    back_from_grpc(call);
    if (tag.event != Event::kArrived) {
      if (--call->tags_due == 0) delete call;
      continue;
    }
    if (!ok) {  // the server is shutting down: no call, and no more requests on this queue
      delete call;
      release();
      continue;
    }
    call->tags_due = 2;
    hold();  // the handler's own, until the next request holds the door open
    handle(*call);
    request_call(queue);
    release();
  }
}

void ClassifyUnaryDoor::handle(Call& call) {
  // The call keeps `request` until it is finished, so the job may point into it.
  Admitted admitted = admission_.admit(admission_request(&call.context, call.request, "grpc"));
  if (!admitted) {
    handed_to_grpc(&call);
    call.writer.FinishWithError(to_grpc_status(admitted.status()), &call.finished);
    release();
    return;
  }
  call.response.set_model(admitted->model->name());
  call.response.set_model_version(admitted->model->version);
  call.response.set_request_id(admitted.request_id());
  admitted->done = [this, &call](Result<ClassifyResult> result) {
    if (result) fill_response(*result, call.response);
    handed_to_grpc(&call);
    if (result) {
      call.writer.Finish(call.response, grpc::Status::OK, &call.finished);
    } else {
      call.writer.FinishWithError(to_grpc_status(result.status()), &call.finished);
    }
    release();
  };
  admission_.submit(std::move(admitted));
}

}  // namespace tessera
