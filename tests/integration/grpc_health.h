// grpc.health.v1.Health/Check as generic tools call it (grpcurl, load balancers): raw protobuf
// bytes over a GenericStub, decoded without the service's generated code (libgrpc++ ships none).
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>
#include <vector>

namespace tessera::testing {

grpc::ByteBuffer to_buffer(const std::string& bytes);
std::string to_string(const grpc::ByteBuffer& buffer);
// A length-delimited field `number` holding `value`, as a serialised message.
std::string bytes_field(int number, const std::string& value);
// The length-delimited fields numbered `number` of a serialised message (a failed parse fails the test).
std::vector<std::string> bytes_fields(const std::string& message, int number);

// grpc.health.v1's ServingStatus numbers.
constexpr int kHealthServing = 1;
constexpr int kHealthNotServing = 2;

// Health/Check for `service` ("" = the server): the status and the ServingStatus number
// (kHealthServing, kHealthNotServing; -1 when the call failed).
std::pair<grpc::Status, int> grpc_health_check(grpc::GenericStub& stub, const std::string& service = "");

// The same over a fresh channel to `address`.
int grpc_health(const std::string& address, const std::string& service = "");

}  // namespace tessera::testing
