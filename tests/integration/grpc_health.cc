#include "tests/integration/grpc_health.h"

#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <vector>

namespace tessera::testing {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

grpc::ByteBuffer to_buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string to_string(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return {};
  std::string out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

std::string bytes_field(int number, const std::string& value) {
  UnknownFieldSet fields;
  fields.AddLengthDelimited(number, value);
  std::string out;
  fields.SerializeToString(&out);
  return out;
}

std::vector<std::string> bytes_fields(const std::string& message, int number) {
  UnknownFieldSet fields;
  EXPECT_TRUE(fields.ParseFromString(message));
  std::vector<std::string> out;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& f = fields.field(i);
    if (f.number() == number && f.type() == UnknownField::TYPE_LENGTH_DELIMITED) out.push_back(f.length_delimited());
  }
  return out;
}

std::pair<grpc::Status, int> grpc_health_check(grpc::GenericStub& stub, const std::string& service) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::ByteBuffer request = to_buffer(service.empty() ? "" : bytes_field(1, service));
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status status = done.get_future().get();
  int serving = -1;
  if (status.ok()) {
    UnknownFieldSet fields;
    serving = fields.ParseFromString(to_string(response)) ? 0 : -1;  // proto3: an absent enum is 0, UNKNOWN
    for (int i = 0; i < fields.field_count(); ++i) {
      if (fields.field(i).number() == 1) serving = static_cast<int>(fields.field(i).varint());
    }
  }
  return {status, serving};
}

int grpc_health(const std::string& address, const std::string& service) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  return grpc_health_check(stub, service).second;
}

}  // namespace tessera::testing
