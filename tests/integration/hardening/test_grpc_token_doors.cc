// Issue 24, item 6: with bearer tokens configured, every gRPC method of every service the daemon
// serves wants the token (KServe's ModelReady too, so model names cannot be probed; server
// reflection too), except grpc.health.v1.Health and KServe's ServerLive/ServerReady. The methods
// are enumerated from the server's own descriptors (through reflection, with the token), so a new
// RPC cannot slip by. Two authorization entries are refused on gRPC and HTTP alike.
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/integration/daemon_test.h"
#include "tests/integration/grpc_health.h"
#include "tests/integration/raw_connection.h"
#include "tests/integration/temp_file.h"
#include "tests/integration/test_certs.h"

namespace tessera::testing {
namespace {

constexpr const char* kDoorsToken = "doors-token-3e9a71";
constexpr auto kDoorTimeout = std::chrono::seconds(5);
constexpr const char* kReflection = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

// How one call went: its status and the first message answered ("" when none).
struct CallResult {
  grpc::Status status;
  std::string answer;
};

class GrpcTokenDoorsTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override { return {"--auth-tokens", tokens_.path.string()}; }

  void SetUp() override {
    DaemonTest::SetUp();
    stub_generic_ = std::make_unique<grpc::GenericStub>(
        grpc::CreateChannel(daemon_->grpc_address(), grpc::InsecureChannelCredentials()));
  }

  // Calls `method` as a generic tool does, whatever its kind: one `request` message, then the
  // half-close; reads one answer. `authorizations` are sent as that many "authorization" entries.
  CallResult call(const std::string& method, const std::vector<std::string>& authorizations,
                  const std::string& request = "") {
    grpc::CompletionQueue cq;
    grpc::ClientContext context;
    for (const std::string& a : authorizations) context.AddMetadata("authorization", a);
    context.set_deadline(std::chrono::system_clock::now() + kDoorTimeout);
    auto stream = stub_generic_->PrepareCall(&context, method, &cq);
    auto next = [&cq](intptr_t want) {
      void* tag = nullptr;
      bool ok = false;
      const auto r = cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + kDoorTimeout + kDoorTimeout);
      EXPECT_EQ(r, grpc::CompletionQueue::GOT_EVENT);
      EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
      return r == grpc::CompletionQueue::GOT_EVENT && ok;
    };
    CallResult result;
    stream->StartCall(reinterpret_cast<void*>(1));
    if (next(1)) {
      const grpc::ByteBuffer out = to_buffer(request);
      stream->Write(out, reinterpret_cast<void*>(2));
      if (next(2)) {
        stream->WritesDone(reinterpret_cast<void*>(3));
        next(3);
      }
      grpc::ByteBuffer in;
      stream->Read(&in, reinterpret_cast<void*>(4));
      if (next(4)) result.answer = to_string(in);
    }
    stream->Finish(&result.status, reinterpret_cast<void*>(5));
    void* tag = nullptr;
    bool ok = false;
    // An open server stream (health Watch) goes on after its first answer: cancelled after 1 s.
    if (cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(1)) ==
        grpc::CompletionQueue::TIMEOUT) {
      context.TryCancel();
      next(5);
    }
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {}
    return result;
  }

  // Every "/package.Service/Method" the daemon serves, read from its descriptors by reflection.
  std::vector<std::string> served_methods() {
    const std::string bearer = std::string("Bearer ") + kDoorsToken;
    const CallResult listed = call(kReflection, {bearer}, bytes_field(7, ""));  // list_services
    EXPECT_TRUE(listed.status.ok()) << listed.status.error_message();
    const auto list = bytes_fields(listed.answer, 6);
    if (list.size() != 1) return {};
    std::vector<std::string> methods;
    for (const std::string& entry : bytes_fields(list[0], 1)) {
      const std::string service = bytes_fields(entry, 1).at(0);
      // file_containing_symbol: the service's file, whose ServiceDescriptorProto lists its methods.
      const CallResult described = call(kReflection, {bearer}, bytes_field(4, service));
      EXPECT_TRUE(described.status.ok()) << service << ": " << described.status.error_message();
      size_t found = 0;
      for (const std::string& files : bytes_fields(described.answer, 4)) {
        for (const std::string& bytes : bytes_fields(files, 1)) {
          google::protobuf::FileDescriptorProto file;
          EXPECT_TRUE(file.ParseFromString(bytes));
          for (const auto& s : file.service()) {
            const std::string full = file.package().empty() ? s.name() : file.package() + "." + s.name();
            if (full != service) continue;
            for (const auto& m : s.method()) methods.push_back("/" + full + "/" + m.name());
            ++found;
          }
        }
      }
      // gRPC's default health service is written by hand, without descriptors: its two methods.
      if (service == "grpc.health.v1.Health" && found == 0) {
        methods.insert(methods.end(), {"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"});
        continue;
      }
      EXPECT_EQ(found, 1u) << "no descriptor of " << service;
    }
    return methods;
  }

  TempFile tokens_{std::string(kDoorsToken) + "\n"};
  std::unique_ptr<grpc::GenericStub> stub_generic_;
};

bool open_method(const std::string& method) {
  return method.starts_with("/grpc.health.v1.Health/") || method == "/inference.GRPCInferenceService/ServerLive" ||
         method == "/inference.GRPCInferenceService/ServerReady";
}

TEST_F(GrpcTokenDoorsTest, EveryMethodOfEveryServiceWantsTheTokenButHealth) {
  const std::vector<std::string> methods = served_methods();
  const std::set<std::string> all(methods.begin(), methods.end());
  // The services the daemon registers, reflection and health among them.
  for (const char* expected :
       {"/tessera.v1.Classifier/Classify", "/tessera.v1.Telemetry/WatchTelemetry",
        "/inference.GRPCInferenceService/ModelReady", kReflection, "/grpc.health.v1.Health/Check"}) {
    EXPECT_TRUE(all.count(expected)) << expected << " not among the " << methods.size() << " served methods";
  }
  for (const std::string& method : methods) {
    const CallResult without = call(method, {});
    const CallResult wrong = call(method, {"Bearer not-the-token"});
    if (open_method(method)) {
      EXPECT_NE(without.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method << " is open";
      continue;
    }
    EXPECT_EQ(without.status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << method << " answered without a token: " << without.status.error_message();
    EXPECT_EQ(without.answer, "") << method;
    EXPECT_NE(without.status.error_message().find("missing bearer token"), std::string::npos) << method;
    EXPECT_EQ(wrong.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method;
  }
}

TEST_F(GrpcTokenDoorsTest, ModelReadyOfAnyNameWantsTheTokenFirst) {
  // ModelReadyRequest{name = 1}: an unknown name must not be told apart from a known one.
  for (const std::string name : {"fashion-mnist", "no-such-model"}) {
    const CallResult r = call("/inference.GRPCInferenceService/ModelReady", {}, bytes_field(1, name));
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << name << ": " << r.status.error_message();
  }
  const CallResult with = call("/inference.GRPCInferenceService/ModelReady", {std::string("Bearer ") + kDoorsToken},
                               bytes_field(1, "no-such-model"));
  EXPECT_EQ(with.status.error_code(), grpc::StatusCode::NOT_FOUND) << with.status.error_message();
}

TEST_F(GrpcTokenDoorsTest, ReflectionWantsTheTokenHealthDoesNot) {
  const CallResult refused = call(kReflection, {}, bytes_field(7, ""));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << refused.status.error_message();
  EXPECT_EQ(refused.answer, "");
  const CallResult listed = call(kReflection, {std::string("Bearer ") + kDoorsToken}, bytes_field(7, ""));
  EXPECT_TRUE(listed.status.ok()) << listed.status.error_message();
  EXPECT_NE(listed.answer.find("tessera.v1.Classifier"), std::string::npos);
  auto [status, serving] = grpc_health_check(*stub_generic_, "tessera.v1.Classifier");
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(serving, 1);
}

TEST_F(GrpcTokenDoorsTest, TwoAuthorizationEntriesAreRefused) {
  const std::string bearer = std::string("Bearer ") + kDoorsToken;
  const CallResult one = call("/tessera.v1.Classifier/ListModels", {bearer});
  EXPECT_TRUE(one.status.ok()) << one.status.error_message();
  for (const auto& twice :
       {std::vector<std::string>{bearer, bearer}, {bearer, "Bearer not-the-token"}, {"Bearer not-the-token", bearer}}) {
    const CallResult r = call("/tessera.v1.Classifier/ListModels", twice);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << r.status.error_message();
    EXPECT_NE(r.status.error_message().find("more than one 'authorization'"), std::string::npos)
        << r.status.error_message();
  }
}

TEST_F(GrpcTokenDoorsTest, TwoAuthorizationHeadersAreRefusedOverHttp) {
  const std::string bearer = std::string("Authorization: Bearer ") + kDoorsToken + "\r\n";
  auto get = [&](const std::string& headers) {
    RawConnection connection(daemon_->http_port());
    EXPECT_TRUE(connection.connected());
    connection.send("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "Connection: close\r\n\r\n");
    return connection.read_until_closed(std::chrono::milliseconds(5000));
  };
  EXPECT_EQ(http_status_of(get(bearer)), 200);
  for (const std::string& twice : {bearer + bearer, bearer + "Authorization: Bearer not-the-token\r\n",
                                   "Authorization: Bearer not-the-token\r\n" + bearer}) {
    const std::string answer = get(twice);
    EXPECT_EQ(http_status_of(answer), 401) << answer;
    EXPECT_NE(answer.find("more than one Authorization header"), std::string::npos) << answer;
  }
}

// The same check on the TLS port (core SSL credentials carry the processor too).
TEST(GrpcTokenDoorsTls, TheTokenIsCheckedOverTlsToo) {
  const TestCerts certs;
  if (!certs.ok()) GTEST_SKIP() << "cannot make test certificates: " << certs.error();
  const TempFile tokens(std::string(kDoorsToken) + "\n");
  std::vector<std::string> args = certs.daemon_args();
  args.insert(args.end(), {"--auth-tokens", tokens.path.string()});
  TesseradProcess daemon(args);
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = read_file(certs.ca());
  grpc::ChannelArguments channel_args;
  channel_args.SetSslTargetNameOverride("localhost");
  auto stub = v1::Classifier::NewStub(
      grpc::CreateCustomChannel(daemon.grpc_address(), grpc::SslCredentials(options), channel_args));
  auto list = [&](const std::string& authorization) {
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    context.set_deadline(std::chrono::system_clock::now() + kDoorTimeout);
    v1::ListModelsResponse response;
    return stub->ListModels(&context, v1::ListModelsRequest(), &response);
  };
  const grpc::Status without = list("");
  EXPECT_EQ(without.error_code(), grpc::StatusCode::UNAUTHENTICATED) << without.error_message();
  const grpc::Status with = list(std::string("Bearer ") + kDoorsToken);
  EXPECT_TRUE(with.ok()) << with.error_message() << "\n" << daemon.log();
}

}  // namespace
}  // namespace tessera::testing
