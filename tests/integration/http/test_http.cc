// The HTTP API and the web UI against the real daemon.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;

class HttpTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    client_ = std::make_unique<HttpClient>(daemon_->http_port());
  }

  // Asserts the body is {"error": {"code": code, "message": non-empty}}.
  static void expect_error(const HttpReply& reply, int status, const std::string& code) {
    EXPECT_EQ(reply.status, status) << reply.error << reply.body;
    EXPECT_EQ(reply.header("content-type"), "application/json");
    const json body = json::parse(reply.body, nullptr, false);
    ASSERT_FALSE(body.is_discarded()) << reply.body;
    EXPECT_EQ(body["error"]["code"], code) << reply.body;
    EXPECT_FALSE(body["error"]["message"].get<std::string>().empty()) << reply.body;
  }

  std::vector<FmnistImage> images_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(HttpTest, ClassifyAnswersJson) {
  const HttpReply reply =
      client_->post("/v1/classify?model=fashion-mnist&top_k=3", read_binary(images_[0].png), "image/png");
  ASSERT_EQ(reply.status, 200) << reply.error << reply.body;
  EXPECT_EQ(reply.header("content-type"), "application/json");
  const json body = json::parse(reply.body);
  EXPECT_EQ(body["model"], "fashion-mnist");
  EXPECT_FALSE(body["request_id"].get<std::string>().empty());
  EXPECT_EQ(reply.header("x-request-id"), body["request_id"].get<std::string>());
  ASSERT_EQ(body["classes"].size(), 3u);
  for (const json& c : body["classes"]) {
    const int index = c["index"].get<int>();
    ASSERT_GE(index, 0);
    ASSERT_LT(index, 10);
    EXPECT_EQ(c["label"], fmnist_labels()[static_cast<size_t>(index)]);
    EXPECT_GE(c["score"].get<double>(), 0.0);
    EXPECT_LE(c["score"].get<double>(), 1.0);
  }
  for (const char* key : {"decode_us", "queue_us", "inference_us", "total_us"}) {
    EXPECT_TRUE(body["timing"][key].is_number_unsigned()) << key;
  }
  EXPECT_GT(body["timing"]["total_us"].get<uint64_t>(), 0u);
}

// A browser form (multipart/form-data, as `curl -F image=@boot.png` sends it) classifies like
// the raw body; a form without a file is a 400.
TEST_F(HttpTest, MultipartFormClassifiesLikeTheRawBody) {
  const std::string png = read_binary(images_[2].png);
  const HttpReply raw = client_->post("/v1/classify", png, "image/png");
  ASSERT_EQ(raw.status, 200) << raw.body;
  const std::string boundary = "----tessera" + std::to_string(png.size());
  const std::string form = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n--" +
                           boundary + "\r\nContent-Disposition: form-data; name=\"image\"; filename=\"x.png\"\r\n" +
                           "Content-Type: image/png\r\n\r\n" + png + "\r\n--" + boundary + "--\r\n";
  const HttpReply multi = client_->post("/v1/classify", form, "multipart/form-data; boundary=" + boundary);
  ASSERT_EQ(multi.status, 200) << multi.body;
  EXPECT_EQ(json::parse(multi.body)["classes"], json::parse(raw.body)["classes"]);
  const std::string no_file =
      "--" + boundary + "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n--" + boundary + "--\r\n";
  expect_error(client_->post("/v1/classify", no_file, "multipart/form-data; boundary=" + boundary), 400,
               "INVALID_ARGUMENT");
}

TEST_F(HttpTest, KeepsTheConnectionAliveAcrossRequests) {
  const std::string image = read_binary(images_[0].jpg);
  for (int i = 0; i < 3; ++i) {
    const HttpReply reply = client_->post("/v1/classify", image, "image/jpeg");
    ASSERT_EQ(reply.status, 200) << reply.error << reply.body;
    EXPECT_TRUE(reply.keep_alive);
    EXPECT_EQ(json::parse(reply.body)["classes"].size(), 5u);  // top_k defaults to 5
  }
  EXPECT_EQ(client_->get("/healthz").status, 200);
}

TEST_F(HttpTest, CorruptImageIs400WithAMessage) {
  std::string png = read_binary(images_[0].png);
  png.resize(png.size() / 2);
  expect_error(client_->post("/v1/classify", png, "image/png"), 400, "INVALID_ARGUMENT");
  expect_error(client_->post("/v1/classify", "GIF89a not supported", "image/gif"), 400, "INVALID_ARGUMENT");
  expect_error(client_->post("/v1/classify", ""), 400, "INVALID_ARGUMENT");
  expect_error(client_->post("/v1/classify?top_k=many", read_binary(images_[0].png)), 400, "INVALID_ARGUMENT");
}

TEST_F(HttpTest, UnknownModelIs404) {
  const HttpReply reply = client_->post("/v1/classify?model=nope", read_binary(images_[0].png), "image/png");
  expect_error(reply, 404, "NOT_FOUND");
  EXPECT_NE(reply.body.find("nope"), std::string::npos);
}

TEST_F(HttpTest, ServesTheWebUi) {
  for (const char* target : {"/", "/index.html"}) {
    const HttpReply reply = client_->get(target);
    ASSERT_EQ(reply.status, 200) << target << " " << reply.error;
    EXPECT_EQ(reply.header("content-type"), "text/html; charset=utf-8");
    EXPECT_NE(reply.body.find("<title>Tessera</title>"), std::string::npos);
    EXPECT_NE(reply.body.find("/v1/classify"), std::string::npos);
  }
  const HttpReply head = client_->request(http::verb::head, "/");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
}

TEST_F(HttpTest, StaticFilesDoNotEscapeTheWebRoot) {
  for (const char* target : {"/../CMakeLists.txt", "/%2e%2e/CMakeLists.txt", "/..%2fCMakeLists.txt",
                             "/a/../../CMakeLists.txt", "/.git/config", "/missing.html", "/%zz"}) {
    const HttpReply reply = client_->get(target);
    EXPECT_EQ(reply.status, 404) << target << ": " << reply.error << reply.body;
    EXPECT_EQ(reply.body.find("project(tessera"), std::string::npos) << target;
  }
}

TEST_F(HttpTest, HealthzModelsAndUnknownRoutes) {
  const HttpReply health = client_->get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");

  const HttpReply models = client_->get("/v1/models");
  ASSERT_EQ(models.status, 200);
  const json body = json::parse(models.body);
  ASSERT_EQ(body["models"].size(), 1u);
  EXPECT_EQ(body["default"], "fashion-mnist");
  const json& model = body["models"][0];
  EXPECT_EQ(model["name"], "fashion-mnist");
  EXPECT_EQ(model["input"]["width"], 28);
  EXPECT_EQ(model["input"]["height"], 28);
  EXPECT_EQ(model["input"]["channels"], 1);
  EXPECT_EQ(model["labels"].size(), 10u);
  EXPECT_EQ(model["labels"][9], "Ankle boot");
  // int8 (the default): where its multiply-adds run, as the load line says it.
  ASSERT_EQ(model["precision"], "int8");
  const json& placement = model["placement"];
  ASSERT_TRUE(placement.is_object()) << model.dump();
  EXPECT_GT(placement["fabric_mac_share"].get<double>(), 0.5) << placement.dump();
  EXPECT_LE(placement["fabric_mac_share"].get<double>(), 1.0) << placement.dump();
  EXPECT_GE(placement["fabric_segments"].get<int>(), 1) << placement.dump();
  EXPECT_GE(placement["handovers"].get<int>(), 0) << placement.dump();
  EXPECT_EQ(placement["summary"].get<std::string>().rfind("fabric ", 0), 0u) << placement.dump();
  // Its host ops (the fully-connected layers) with their time measured at load.
  EXPECT_NE(placement["summary"].get<std::string>().find("measured time"), std::string::npos) << placement.dump();

  expect_error(client_->get("/v1/nothing-here"), 404, "NOT_FOUND");
}

TEST_F(HttpTest, WrongMethodIs405) {
  const HttpReply get_classify = client_->get("/v1/classify");
  expect_error(get_classify, 405, "INVALID_ARGUMENT");
  EXPECT_EQ(get_classify.header("allow"), "POST");
  expect_error(client_->post("/healthz", "x"), 405, "INVALID_ARGUMENT");
  expect_error(client_->request(http::verb::delete_, "/v1/models"), 405, "INVALID_ARGUMENT");
}

// A daemon with a small body limit, to test 413 without megabytes of traffic.
class HttpLimitTest : public HttpTest {
 protected:
  std::vector<std::string> extra_args() const override { return {"--max-image-bytes", "65536"}; }
};

TEST_F(HttpLimitTest, TooLargeBodyIs413) {
  const std::string big(100000, 'x');
  const HttpReply reply = client_->post("/v1/classify", big, "image/png");
  expect_error(reply, 413, "INVALID_ARGUMENT");
  EXPECT_FALSE(reply.keep_alive);
  // The daemon is fine afterwards, and a small image still works on a new connection.
  const HttpReply ok = client_->post("/v1/classify", read_binary(images_[0].png), "image/png");
  EXPECT_EQ(ok.status, 200) << ok.error << ok.body;
}

TEST_F(HttpLimitTest, TooLargeImageOverGrpcIsRefused) {
  const GrpcAnswer answer = classify_grpc(*stub_, std::string(100000, 'x'));
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << answer.status.error_message();
}

}  // namespace
}  // namespace tessera::testing
