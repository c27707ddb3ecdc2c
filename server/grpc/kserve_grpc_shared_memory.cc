// Triton's system shared-memory extension over gRPC: SystemSharedMemoryStatus, ...Register and
// ...Unregister, over the same SharedMemoryRegistry as REST's /v2/systemsharedmemory/*
// (shared_memory_routes.h). Codes as Triton's: ALREADY_EXISTS for a name registered twice,
// INVALID_ARGUMENT for a bad key or window, NOT_FOUND for the status of an unknown name; an
// unknown name unregisters as OK. Without a registry (none given to the service) UNIMPLEMENTED.
#include "server/grpc/finish_unary.h"
#include "server/grpc/kserve_grpc_service.h"
#include "server/grpc/status_mapping.h"
#include "server/kserve/shared_memory.h"

namespace tessera {

using kserve::RegionStatus;

namespace {

grpc::Status no_registry() {
  return {grpc::StatusCode::UNIMPLEMENTED, "system shared memory is not served by this service"};
}

}  // namespace

grpc::ServerUnaryReactor* KserveGrpcService::SystemSharedMemoryStatus(
    grpc::CallbackServerContext* context, const inference::SystemSharedMemoryStatusRequest* request,
    inference::SystemSharedMemoryStatusResponse* response) {
  if (shm_ == nullptr) return finish_unary(context, no_registry());
  auto regions = shm_->status(request->name());
  if (!regions) return finish_unary(context, to_grpc_status(regions.status()));
  for (const RegionStatus& r : *regions) {
    auto& row = (*response->mutable_regions())[r.name];
    row.set_name(r.name);
    row.set_key(r.key);
    row.set_offset(r.offset);
    row.set_byte_size(r.byte_size);
  }
  return finish_unary(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* KserveGrpcService::SystemSharedMemoryRegister(
    grpc::CallbackServerContext* context, const inference::SystemSharedMemoryRegisterRequest* request,
    inference::SystemSharedMemoryRegisterResponse* /*response*/) {
  if (shm_ == nullptr) return finish_unary(context, no_registry());
  const RegionStatus region{request->name(), request->key(), request->offset(), request->byte_size()};
  return finish_unary(context, to_grpc_status(shm_->register_region(region)));
}

grpc::ServerUnaryReactor* KserveGrpcService::SystemSharedMemoryUnregister(
    grpc::CallbackServerContext* context, const inference::SystemSharedMemoryUnregisterRequest* request,
    inference::SystemSharedMemoryUnregisterResponse* /*response*/) {
  if (shm_ == nullptr) return finish_unary(context, no_registry());
  return finish_unary(context, to_grpc_status(shm_->unregister(request->name())));
}

}  // namespace tessera
