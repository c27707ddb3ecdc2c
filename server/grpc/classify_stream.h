// ClassifyStream's reactor: a paced stream (paced_stream.h) of ClassifyRequests, each answer
// tagged with its request id. Each message goes through admission without a slot of its own
// (the stream holds one until it is done).
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/grpc/paced_stream.h"
#include "tessera/v1/classifier.grpc.pb.h"

namespace tessera {

class Admission;

class ClassifyStreamReactor final : public PacedStream<v1::ClassifyRequest, v1::ClassifyResponse> {
 public:
  ClassifyStreamReactor(Admission& admission, grpc::CallbackServerContext* context);

 private:
  // Submits `request` (if admission lets it in) or answers its error.
  void submit(v1::ClassifyRequest request) override;

  Admission& admission_;
  grpc::CallbackServerContext* context_;
};

}  // namespace tessera
