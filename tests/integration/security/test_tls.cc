// TLS on both ports against the real daemon, with certificates made by the openssl CLI: gRPC
// (SslCredentials) and HTTPS work, plain clients to the TLS ports fail; mutual TLS refuses
// clients without a certificate of the client CA; bad files stop the start naming the file;
// every new setting works from a config file; the gRPC per-connection stream limit holds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "tessera/v1/telemetry.grpc.pb.h"
#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/test_certs.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

// A channel to `address` over TLS trusting `certs.ca()`, presenting `cert`/`key` when given.
// `instance` keeps channels apart (gRPC shares connections between channels with equal args).
std::shared_ptr<grpc::Channel> tls_channel(const std::string& address, const TestCerts& certs,
                                           const fs::path& cert = {}, const fs::path& key = {}, int instance = 0) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = read_file(certs.ca());
  if (!cert.empty()) {
    options.pem_cert_chain = read_file(cert);
    options.pem_private_key = read_file(key);
  }
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  args.SetInt("tessera.test.instance", instance);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(options), args);
}

GrpcAnswer classify_on(const std::shared_ptr<grpc::Channel>& channel, const std::string& image) {
  auto stub = v1::Classifier::NewStub(channel);
  return classify_grpc(*stub, image);
}

class TlsTest : public DaemonTest {
 protected:
  virtual bool mutual() const { return false; }
  std::vector<std::string> extra_args() const override { return certs_.daemon_args(mutual()); }

  void SetUp() override {
    if (!certs_.ok()) GTEST_SKIP() << "cannot make test certificates: " << certs_.error();
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    image_ = read_binary(images_[0].png);
  }

  HttpTlsOptions https(bool with_client_cert = false) const {
    HttpTlsOptions o;
    o.ca = certs_.ca();
    if (with_client_cert) {
      o.cert = certs_.client_cert();
      o.key = certs_.client_key();
    }
    return o;
  }

  TestCerts certs_;
  std::vector<FmnistImage> images_;
  std::string image_;
};

TEST_F(TlsTest, GrpcClassifiesOverTlsAndRefusesPlainClients) {
  const GrpcAnswer secure = classify_on(tls_channel(daemon_->grpc_address(), certs_), image_);
  ASSERT_TRUE(secure.status.ok()) << secure.status.error_message();
  EXPECT_EQ(secure.top1(), images_[0].label_name);

  const GrpcAnswer plain = classify_grpc(*stub_, image_);  // the fixture's insecure stub
  EXPECT_EQ(plain.status.error_code(), grpc::StatusCode::UNAVAILABLE) << plain.status.error_message();
}

TEST_F(TlsTest, HttpsServesTheApiAndRefusesPlainHttp) {
  HttpClient client(daemon_->http_port(), https());
  const HttpReply health = client.get("/healthz");
  ASSERT_EQ(health.status, 200) << health.error;
  EXPECT_EQ(health.body, "ok\n");
  for (int i = 0; i < 2; ++i) {  // the same TLS connection, kept alive
    const HttpReply reply = client.post("/v1/classify", image_, "image/png");
    ASSERT_EQ(reply.status, 200) << reply.error << reply.body;
    EXPECT_TRUE(reply.keep_alive);
    EXPECT_NE(reply.body.find(images_[0].label_name), std::string::npos) << reply.body;
  }

  // Server-sent events over TLS: the whole chunked body of two events, then the TLS close.
  const HttpReply events = client.get("/v1/telemetry/stream?interval_ms=100&max_events=2");
  ASSERT_EQ(events.status, 200) << events.error;
  EXPECT_EQ(events.header("content-type"), "text/event-stream");
  size_t count = 0;
  for (size_t at = events.body.find("data: {"); at != std::string::npos; at = events.body.find("data: {", at + 1))
    ++count;
  EXPECT_EQ(count, 2u) << events.body;
  EXPECT_NE(events.body.find("\"device_kind\":\"emu\""), std::string::npos) << events.body;

  HttpClient plain(daemon_->http_port(), std::chrono::seconds(5));
  const HttpReply refused = plain.get("/healthz");
  EXPECT_EQ(refused.status, 0) << "plain HTTP answered on the TLS port: " << refused.body;

  // A client that does not trust the server's CA fails the handshake.
  HttpTlsOptions wrong_ca;
  wrong_ca.ca = certs_.dir() / "other-ca.pem";
  HttpClient untrusting(daemon_->http_port(), wrong_ca, std::chrono::seconds(5));
  const HttpReply untrusted = untrusting.get("/healthz");
  EXPECT_EQ(untrusted.status, 0);
  EXPECT_NE(untrusted.error.find("TLS handshake"), std::string::npos) << untrusted.error;

  EXPECT_EQ(HttpClient(daemon_->http_port(), https()).get("/v1/models").status, 200) << "still serving";
}

class MutualTlsTest : public TlsTest {
 protected:
  bool mutual() const override { return true; }
};

TEST_F(MutualTlsTest, ClientsWithACertificateOfTheClientCaAreServed) {
  const GrpcAnswer grpc_answer =
      classify_on(tls_channel(daemon_->grpc_address(), certs_, certs_.client_cert(), certs_.client_key()), image_);
  ASSERT_TRUE(grpc_answer.status.ok()) << grpc_answer.status.error_message();
  EXPECT_EQ(grpc_answer.top1(), images_[0].label_name);

  HttpClient client(daemon_->http_port(), https(true));
  const HttpReply reply = client.post("/v1/classify", image_, "image/png");
  ASSERT_EQ(reply.status, 200) << reply.error << reply.body;
  EXPECT_EQ(client.get("/v1/models").status, 200);
}

TEST_F(MutualTlsTest, ClientsWithoutATrustedCertificateAreRefused) {
  const GrpcAnswer no_cert = classify_on(tls_channel(daemon_->grpc_address(), certs_, {}, {}, 1), image_);
  EXPECT_EQ(no_cert.status.error_code(), grpc::StatusCode::UNAVAILABLE) << no_cert.status.error_message();
  const GrpcAnswer other_ca = classify_on(
      tls_channel(daemon_->grpc_address(), certs_, certs_.other_client_cert(), certs_.other_client_key(), 2), image_);
  EXPECT_EQ(other_ca.status.error_code(), grpc::StatusCode::UNAVAILABLE) << other_ca.status.error_message();

  const HttpReply http_no_cert =
      HttpClient(daemon_->http_port(), https(false), std::chrono::seconds(5)).get("/healthz");
  EXPECT_EQ(http_no_cert.status, 0) << "served without a client certificate: " << http_no_cert.body;
  HttpTlsOptions other = https(false);
  other.cert = certs_.other_client_cert();
  other.key = certs_.other_client_key();
  const HttpReply http_other = HttpClient(daemon_->http_port(), other, std::chrono::seconds(5)).get("/healthz");
  EXPECT_EQ(http_other.status, 0) << "served a certificate of another CA: " << http_other.body;

  // The refusals did not hurt the daemon.
  EXPECT_EQ(HttpClient(daemon_->http_port(), https(true)).get("/healthz").status, 200);
}

// The daemon must not start; its error names `name`.
void expect_start_error(const std::vector<std::string>& args, const std::string& name, const std::string& why) {
  TesseradProcess daemon(args);
  EXPECT_FALSE(daemon.ok());
  EXPECT_NE(daemon.error().find("exited with status 1"), std::string::npos) << daemon.error();
  EXPECT_NE(daemon.error().find(name), std::string::npos) << daemon.error();
  EXPECT_NE(daemon.error().find(why), std::string::npos) << daemon.error();
}

TEST(TlsStartup, BadCertificateOrKeyFilesStopTheStartNamingTheFile) {
  TestCerts certs;
  if (!certs.ok()) GTEST_SKIP() << certs.error();
  const std::string missing = (certs.dir() / "no-such-cert.pem").string();
  expect_start_error({"--tls-cert", missing, "--tls-key", certs.server_key().string()}, missing, "cannot read");
  // The client's key does not belong to the server's certificate.
  expect_start_error({"--tls-cert", certs.server_cert().string(), "--tls-key", certs.client_key().string()},
                     certs.client_key().string(), "does not match");
  const fs::path not_pem = certs.dir() / "not-a-cert.pem";
  std::ofstream(not_pem) << "hello\n";
  expect_start_error({"--tls-cert", not_pem.string(), "--tls-key", certs.server_key().string()}, not_pem.string(),
                     "no PEM certificate");
  expect_start_error({"--tls-cert", certs.server_cert().string(), "--tls-key", not_pem.string()}, not_pem.string(),
                     "no PEM private key");
  const std::string missing_ca = (certs.dir() / "no-such-ca.pem").string();
  expect_start_error({"--tls-cert", certs.server_cert().string(), "--tls-key", certs.server_key().string(),
                      "--tls-client-ca", missing_ca},
                     missing_ca, "cannot read");
  expect_start_error({"--tls-key", certs.server_key().string()}, "--tls-cert", "both");
}

TEST(SecurityConfig, ConfigFileKeysSetTlsTokensAndLimits) {
  TestCerts certs;
  if (!certs.ok()) GTEST_SKIP() << certs.error();
  const fs::path tokens = certs.dir() / "tokens.txt";
  std::ofstream(tokens) << "# for the config test\nconfig-token-4711\n";
  const fs::path config = certs.dir() / "tesserad.toml";
  std::ofstream(config) << "tls-cert = \"" << certs.server_cert().string() << "\"\n"
                        << "tls-key = \"" << certs.server_key().string() << "\"\n"
                        << "tls-client-ca = \"" << certs.ca().string() << "\"\n"
                        << "auth-tokens = \"" << tokens.string() << "\"\n"
                        << "http-read-timeout-s = 1\nhttp-write-timeout-s = 7\nhttp-max-in-flight = 3\n"
                        << "grpc-max-concurrent-streams = 9\n";
  TesseradProcess daemon({"--config", config.string()});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const std::string log = daemon.log();
  EXPECT_NE(log.find("security: mutual TLS; 1 bearer token(s)"), std::string::npos) << log;
  EXPECT_NE(log.find("http read timeout 1 s, write timeout 7 s, 3 requests in flight per connection; grpc 9 "
                     "concurrent streams per connection"),
            std::string::npos)
      << log;

  HttpTlsOptions https;
  https.ca = certs.ca();
  https.cert = certs.client_cert();
  https.key = certs.client_key();
  HttpClient client(daemon.http_port(), https);
  EXPECT_EQ(client.get("/v1/models").status, 401);
  client.set_header("authorization", "Bearer config-token-4711");
  const HttpReply models = client.get("/v1/models");
  ASSERT_EQ(models.status, 200) << models.error << models.body;
  EXPECT_TRUE(models.keep_alive);
  // http-read-timeout-s = 1: an idle keep-alive connection is closed after a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const HttpReply after_idle = client.get("/v1/models");
  EXPECT_EQ(after_idle.status, 0) << "the idle connection outlived the 1 s read timeout";
  EXPECT_EQ(client.get("/v1/models").status, 200) << "a new connection";

  auto stub =
      v1::Classifier::NewStub(tls_channel(daemon.grpc_address(), certs, certs.client_cert(), certs.client_key()));
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer config-token-4711");
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListModelsResponse list;
  const grpc::Status status = stub->ListModels(&context, v1::ListModelsRequest(), &list);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(list.models_size(), 1);
}

TEST(GrpcLimits, MaxConcurrentStreamsHoldsPerConnection) {
  TesseradProcess daemon({"--grpc-max-concurrent-streams", "1"});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const auto images = load_fmnist_images();
  ASSERT_FALSE(images.empty());
  const std::string image = read_binary(images[0].png);
  grpc::ChannelArguments first_args;
  first_args.SetInt("tessera.test.instance", 1);
  auto first = grpc::CreateCustomChannel(daemon.grpc_address(), grpc::InsecureChannelCredentials(), first_args);

  // One long watch stream takes the connection's only stream.
  auto telemetry = v1::Telemetry::NewStub(first);
  grpc::ClientContext watch_context;
  v1::WatchTelemetryRequest watch;
  watch.set_interval_ms(60000);
  auto reader = telemetry->WatchTelemetry(&watch_context, watch);
  v1::TelemetrySnapshot snapshot;
  ASSERT_TRUE(reader->Read(&snapshot));

  auto blocked = v1::Classifier::NewStub(first);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1500));
  v1::ClassifyRequest request;
  request.set_image(image);
  v1::ClassifyResponse response;
  const grpc::Status waited = blocked->Classify(&context, request, &response);
  EXPECT_EQ(waited.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << waited.error_message();

  // Another connection is not limited by the first one's streams.
  grpc::ChannelArguments second_args;
  second_args.SetInt("tessera.test.instance", 2);
  auto second = grpc::CreateCustomChannel(daemon.grpc_address(), grpc::InsecureChannelCredentials(), second_args);
  const GrpcAnswer other = classify_on(second, image);
  EXPECT_TRUE(other.status.ok()) << other.status.error_message();

  watch_context.TryCancel();
  reader->Finish();
}

}  // namespace
}  // namespace tessera::testing
