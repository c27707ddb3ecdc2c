// What a callback handler returns when it answers a unary call at once: the call's default
// reactor, finished with `status`.
#pragma once

#include <grpcpp/grpcpp.h>

#include "accel/common/status.h"
#include "server/grpc/status_mapping.h"

namespace tessera {

inline grpc::ServerUnaryReactor* finish_unary(grpc::CallbackServerContext* context, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

inline grpc::ServerUnaryReactor* finish_unary(grpc::CallbackServerContext* context, const Status& status) {
  return finish_unary(context, to_grpc_status(status));
}

}  // namespace tessera
