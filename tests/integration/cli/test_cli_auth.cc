// The CLI's side of TLS and bearer tokens, against a small in-test gRPC server that records the
// metadata it receives (the daemon's side lands on another branch): --token and $TESSERA_TOKEN
// become `authorization: Bearer <token>` on every call of every command; --tls-ca makes a TLS
// channel trusting that CA (certificate made here with the openssl tool).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/v1/classifier.grpc.pb.h"
#include "tessera/v1/telemetry.grpc.pb.h"
#include "tests/integration/cli_test_util.h"
#include "tests/integration/tesserad_process.h"
#include "tests/integration/test_certs.h"

namespace tessera::testing {
namespace {

// Records the `authorization` metadata of every call, per method.
class MetadataLog {
 public:
  void record(const std::string& method, const grpc::ServerContext& context) {
    std::string value = "<none>";
    const auto& md = context.client_metadata();
    if (auto it = md.find("authorization"); it != md.end()) value.assign(it->second.data(), it->second.size());
    std::lock_guard lock(mu_);
    calls_.push_back(method + " " + value);
  }
  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> calls_;
};

class FakeClassifier final : public v1::Classifier::Service {
 public:
  explicit FakeClassifier(MetadataLog& log) : log_(log) {}
  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest*,
                          v1::ListModelsResponse* response) override {
    log_.record("ListModels", *context);
    v1::ModelInfo* m = response->add_models();
    m->set_name("fake-model");
    m->set_format("onnx");
    m->set_precision("int8");
    m->set_device("emu");
    return grpc::Status::OK;
  }
  grpc::Status Classify(grpc::ServerContext* context, const v1::ClassifyRequest*,
                        v1::ClassifyResponse* response) override {
    log_.record("Classify", *context);
    response->set_model("fake-model");
    v1::Class* c = response->add_classes();
    c->set_label("thing");
    c->set_score(1.0f);
    response->mutable_timing()->set_inference_us(10);
    response->mutable_timing()->set_total_us(20);
    return grpc::Status::OK;
  }

 private:
  MetadataLog& log_;
};

class FakeTelemetry final : public v1::Telemetry::Service {
 public:
  explicit FakeTelemetry(MetadataLog& log) : log_(log) {}
  grpc::Status GetTelemetry(grpc::ServerContext* context, const v1::GetTelemetryRequest*,
                            v1::TelemetrySnapshot* snapshot) override {
    log_.record("GetTelemetry", *context);
    snapshot->set_device_kind("emu");
    snapshot->set_ready(true);
    return grpc::Status::OK;
  }
  grpc::Status WatchTelemetry(grpc::ServerContext* context, const v1::WatchTelemetryRequest* request,
                              grpc::ServerWriter<v1::TelemetrySnapshot>* writer) override {
    log_.record("WatchTelemetry", *context);
    v1::TelemetrySnapshot snapshot;
    snapshot.set_device_kind("emu");
    for (uint32_t i = 0; i < std::max(1u, request->max_snapshots()); ++i) writer->Write(snapshot);
    return grpc::Status::OK;
  }

 private:
  MetadataLog& log_;
};

// The two fake services on 127.0.0.1, plaintext or TLS.
class FakeServer {
 public:
  explicit FakeServer(std::shared_ptr<grpc::ServerCredentials> credentials) : classifier_(log), telemetry_(log) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &port_);
    builder.RegisterService(&classifier_);
    builder.RegisterService(&telemetry_);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
  bool ok() const { return server_ && port_ > 0; }
  int port() const { return port_; }

  MetadataLog log;

 private:
  FakeClassifier classifier_;
  FakeTelemetry telemetry_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST(CliAuthTest, TokenIsSentAsBearerMetadataByEveryCommand) {
  FakeServer server(grpc::InsecureServerCredentials());
  ASSERT_TRUE(server.ok());
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  ScratchDir dir("auth");
  const auto image = dir.write("x.png", "any bytes: the fake server does not decode");

  EXPECT_EQ(run_tessera({"models", "--server", address, "--token", "s3cret"}).exit_status, 0);
  EXPECT_EQ(run_tessera({"classify", "--server", address, "--token", "s3cret", image.string()}).exit_status, 0);
  EXPECT_EQ(run_tessera({"watch", "--server", address, "--token", "s3cret", "--count", "1", "--json"}).exit_status, 0);
  EXPECT_EQ(run_tessera({"fleet", address, "--token", "s3cret", "--once"}).exit_status, 0);
  const ProcessOutput bench = run_tessera(
      {"bench", "--server", address, "--token", "s3cret", "--images", dir.path.string(), "--requests", "2", "--json"});
  EXPECT_EQ(bench.exit_status, 0) << bench.err;
  // From the environment, and no header at all without a token.
  EXPECT_EQ(run_process({"/usr/bin/env", "TESSERA_TOKEN=from-env", TESSERA_CLI_PATH, "models", "--server", address},
                        milliseconds(30000))
                .exit_status,
            0);
  EXPECT_EQ(run_process({"/usr/bin/env", "-u", "TESSERA_TOKEN", TESSERA_CLI_PATH, "models", "--server", address},
                        milliseconds(30000))
                .exit_status,
            0);

  const std::vector<std::string> calls = server.log.calls();
  auto count = [&](const std::string& call) { return std::count(calls.begin(), calls.end(), call); };
  EXPECT_EQ(count("ListModels Bearer s3cret"), 3) << "models, fleet, bench's preflight";
  EXPECT_EQ(count("Classify Bearer s3cret"), 3) << "classify once, bench twice";
  EXPECT_EQ(count("WatchTelemetry Bearer s3cret"), 1);
  EXPECT_EQ(count("GetTelemetry Bearer s3cret"), 3) << "fleet, bench before and after";
  EXPECT_EQ(count("ListModels Bearer from-env"), 1);
  EXPECT_EQ(count("ListModels <none>"), 1);
  EXPECT_EQ(calls.size(), 12u);
}

TEST(CliAuthTest, TlsCaMakesATlsChannel) {
  ScratchDir dir("tls");
  const auto key = dir.path / "key.pem";
  const auto cert = dir.path / "cert.pem";
  const ProcessOutput made = run_process(
      {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.string(), "-out",
       cert.string(), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"},
      milliseconds(30000));
  if (made.exit_status != 0) GTEST_SKIP() << "openssl could not make a certificate: " << made.err;
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({read_text_file(key), read_text_file(cert)});
  FakeServer server(grpc::SslServerCredentials(options));
  ASSERT_TRUE(server.ok());
  const std::string address = "localhost:" + std::to_string(server.port());

  const ProcessOutput tls = run_tessera({"models", "--server", address, "--tls-ca", cert.string(), "--token", "t"});
  EXPECT_EQ(tls.exit_status, 0) << tls.err;
  EXPECT_NE(tls.out.find("fake-model"), std::string::npos) << tls.out;
  // Plaintext against the TLS port fails; so does a CA that did not sign the server's certificate.
  const ProcessOutput plain = run_tessera({"models", "--server", address, "--timeout", "3"});
  EXPECT_EQ(plain.exit_status, 1);
  ScratchDir other("tls-other");
  const auto other_cert = other.path / "cert.pem";
  ASSERT_EQ(run_process({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                         (other.path / "key.pem").string(), "-out", other_cert.string(), "-days", "1", "-subj",
                         "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"},
                        milliseconds(30000))
                .exit_status,
            0);
  const ProcessOutput wrong =
      run_tessera({"models", "--server", address, "--tls-ca", other_cert.string(), "--timeout", "3"});
  EXPECT_EQ(wrong.exit_status, 1);
  EXPECT_EQ(server.log.calls(), std::vector<std::string>{"ListModels Bearer t"});
  // An unreadable CA file is refused before any call.
  EXPECT_NE(run_tessera({"models", "--server", address, "--tls-ca", "/no/such/ca.pem"}).exit_status, 0);
}

// The CLI against the real daemon with TLS and bearer tokens on: classify, models, watch and a
// short bench work with --tls-ca and --token; without the token the daemon refuses.
TEST(CliAuthTest, TalksToATlsDaemonThatWantsATokenWithCaAndToken) {
  TestCerts certs;
  if (!certs.ok()) GTEST_SKIP() << "no certificates: " << certs.error();
  ScratchDir dir("cli-tls");
  const auto tokens = dir.write("tokens", "# the test's token\ncli-secret-4d1e\n");
  std::vector<std::string> args = certs.daemon_args();
  args.insert(args.end(), {"--auth-tokens", tokens.string(), "--telemetry-interval-ms", "100"});
  TesseradProcess daemon(args);
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  // The certificate names localhost and 127.0.0.1.
  const std::string server = "localhost:" + std::to_string(daemon.grpc_port());
  const auto images = load_fmnist_images();
  ASSERT_FALSE(images.empty());
  const std::string image = images[0].png.string();
  const std::vector<std::string> secure = {"--server", server, "--tls-ca", certs.ca().string()};
  auto with = [&](std::vector<std::string> cmd, bool token) {
    cmd.insert(cmd.end(), secure.begin(), secure.end());
    if (token) cmd.insert(cmd.end(), {"--token", "cli-secret-4d1e"});
    return run_tessera(cmd);
  };

  ProcessOutput refused = with({"classify", "--json", image}, false);
  EXPECT_EQ(refused.exit_status, 1) << refused.out << refused.err;
  EXPECT_NE((refused.out + refused.err).find("UNAUTHENTICATED"), std::string::npos) << refused.out << refused.err;

  ProcessOutput classified = with({"classify", "--json", image}, true);
  ASSERT_EQ(classified.exit_status, 0) << classified.out << classified.err;
  EXPECT_NE(classified.out.find(images[0].label_name), std::string::npos) << classified.out;
  EXPECT_EQ(with({"models"}, true).exit_status, 0);
  ProcessOutput watched = with({"watch", "--count", "2", "--interval", "100", "--json"}, true);
  ASSERT_EQ(watched.exit_status, 0) << watched.err;
  EXPECT_EQ(json_lines(watched.out).size(), 2u);
  ProcessOutput bench = with(
      {"bench", "--images", images[0].png.parent_path().string(), "--requests", "20", "--concurrency", "2", "--json"},
      true);
  ASSERT_EQ(bench.exit_status, 0) << bench.err;
  EXPECT_NE(bench.out.find("\"ok\""), std::string::npos) << bench.out;
}

}  // namespace
}  // namespace tessera::testing
