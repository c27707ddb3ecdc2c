// The mapping between Tessera's Status and gRPC statuses (HTTP's: http_status_for() in
// http/responses.h).
#pragma once

#include <grpcpp/support/status.h>

#include "accel/common/status.h"

namespace tessera {

// Same code (the enums share values), same message.
grpc::Status to_grpc_status(const Status& status);

// gRPC codes Tessera does not produce fold into the nearest one; the message keeps the original
// code's name.
Status from_grpc_status(const grpc::Status& status);

}  // namespace tessera
