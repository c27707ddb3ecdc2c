// The one mapping between Tessera's Status, gRPC statuses and HTTP status codes.
#pragma once

#include <grpcpp/support/status.h>

#include "accel/common/status.h"

namespace tessera {

// Same code (the enums share values), same message.
grpc::Status to_grpc_status(const Status& status);

// gRPC codes Tessera does not produce fold into the nearest one; the message keeps the original
// code's name.
Status from_grpc_status(const grpc::Status& status);

// HTTP status for a code: 200 OK, 400 invalid, 404 not found, 503 busy/unavailable,
// 504 deadline, 500 internal, 501 unimplemented.
unsigned http_status_for(StatusCode code);

}  // namespace tessera
