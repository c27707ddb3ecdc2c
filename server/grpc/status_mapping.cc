#include "server/grpc/status_mapping.h"

#include <string>

namespace tessera {

grpc::Status to_grpc_status(const Status& status) {
  if (status.is_ok()) return grpc::Status::OK;
  return {static_cast<grpc::StatusCode>(status.code()), status.message()};
}

Status from_grpc_status(const grpc::Status& status) {
  const std::string& message = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::OK: return Status::ok();
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNAVAILABLE: return {static_cast<StatusCode>(status.error_code()), message};
    case grpc::StatusCode::OUT_OF_RANGE: return Status::invalid_argument("OUT_OF_RANGE: " + message);
    case grpc::StatusCode::PERMISSION_DENIED: return Status::failed_precondition("PERMISSION_DENIED: " + message);
    case grpc::StatusCode::UNAUTHENTICATED: return Status::failed_precondition("UNAUTHENTICATED: " + message);
    case grpc::StatusCode::ABORTED: return Status::unavailable("ABORTED: " + message);
    case grpc::StatusCode::DATA_LOSS: return Status::internal("DATA_LOSS: " + message);
    default: return Status::internal("UNKNOWN: " + message);
  }
}

}  // namespace tessera
