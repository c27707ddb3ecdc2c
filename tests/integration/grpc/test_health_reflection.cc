// grpc.health.v1.Health and grpc.reflection.v1alpha.ServerReflection on the real daemon, called
// as generic tools do (grpcurl, load balancers): raw protobuf bytes, decoded here without the
// services' generated code (libgrpc++ ships none for them).
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "tests/integration/daemon_test.h"
#include "tests/integration/grpc_health.h"

namespace tessera::testing {
namespace {

constexpr auto kCallTimeout = std::chrono::seconds(10);

class HealthReflectionTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    stub_generic_ = std::make_unique<grpc::GenericStub>(
        grpc::CreateChannel(daemon_->grpc_address(), grpc::InsecureChannelCredentials()));
  }

  std::pair<grpc::Status, int> health_check(const std::string& service) {
    return grpc_health_check(*stub_generic_, service);
  }

  // One request/response on ServerReflectionInfo: the ServerReflectionResponse's bytes.
  std::string reflect(const std::string& request) {
    grpc::CompletionQueue cq;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    auto call =
        stub_generic_->PrepareCall(&context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
    auto next = [&cq](intptr_t want) {
      void* tag = nullptr;
      bool ok = false;
      const auto r = cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + kCallTimeout);
      return r == grpc::CompletionQueue::GOT_EVENT && reinterpret_cast<intptr_t>(tag) == want && ok;
    };
    std::string answer;
    call->StartCall(reinterpret_cast<void*>(1));
    if (next(1)) {
      const grpc::ByteBuffer out = to_buffer(request);
      call->Write(out, reinterpret_cast<void*>(2));
      EXPECT_TRUE(next(2));
      call->WritesDone(reinterpret_cast<void*>(3));
      EXPECT_TRUE(next(3));
      grpc::ByteBuffer in;
      call->Read(&in, reinterpret_cast<void*>(4));
      if (next(4)) answer = to_string(in);
    }
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(5));
    next(5);
    EXPECT_TRUE(status.ok()) << status.error_message();
    cq.Shutdown();
    void* tag;
    bool ok;
    while (cq.Next(&tag, &ok)) {}
    return answer;
  }

  std::unique_ptr<grpc::GenericStub> stub_generic_;
};

TEST_F(HealthReflectionTest, HealthIsServingForTheServerAndEachService) {
  for (const std::string service : {"", "tessera.v1.Classifier", "tessera.v1.Telemetry"}) {
    auto [status, serving] = health_check(service);
    ASSERT_TRUE(status.ok()) << service << ": " << status.error_message();
    EXPECT_EQ(serving, 1) << "SERVING expected for '" << service << "'";
  }
  auto [status, serving] = health_check("no.such.Service");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(HealthReflectionTest, ReflectionListsTheServicesAndDescribesThem) {
  // list_services (field 7) = "".
  const std::string listed = reflect(bytes_field(7, ""));
  const auto list = bytes_fields(listed, 6);  // list_services_response
  ASSERT_EQ(list.size(), 1u) << "no list_services_response";
  std::set<std::string> names;
  for (const std::string& service : bytes_fields(list[0], 1)) {
    for (const std::string& name : bytes_fields(service, 1)) names.insert(name);
  }
  EXPECT_TRUE(names.count("tessera.v1.Classifier"));
  EXPECT_TRUE(names.count("tessera.v1.Telemetry"));
  EXPECT_TRUE(names.count("grpc.health.v1.Health"));

  // file_containing_symbol (field 4) = the Classifier: a real FileDescriptorProto comes back.
  const std::string described = reflect(bytes_field(4, "tessera.v1.Classifier"));
  const auto files = bytes_fields(described, 4);  // file_descriptor_response
  ASSERT_EQ(files.size(), 1u) << "no file_descriptor_response";
  bool found = false;
  for (const std::string& bytes : bytes_fields(files[0], 1)) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    if (file.name() != "tessera/v1/classifier.proto") continue;
    found = true;
    ASSERT_EQ(file.service_size(), 1);
    std::set<std::string> methods;
    for (const auto& m : file.service(0).method()) methods.insert(m.name());
    EXPECT_EQ(methods, (std::set<std::string>{"Classify", "ClassifyStream", "ListModels", "GetModelIndex", "LoadModel",
                                              "UnloadModel"}));
  }
  EXPECT_TRUE(found) << "tessera/v1/classifier.proto not among the described files";
}

}  // namespace
}  // namespace tessera::testing
