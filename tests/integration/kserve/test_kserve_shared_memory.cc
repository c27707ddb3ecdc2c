// Triton's system shared-memory extension against the real daemon (--allow-client-shm true): the
// test creates the shared-memory object itself (shm_open + ftruncate, as tritonclient's
// create_shared_memory_region does), registers it over HTTP and gRPC, infers with the input in the
// region and the output into it, compares with the answer that carried the data, and checks each
// bad form's error. The bytes in the region are laid out by hand as the protocol says (FP32
// little-endian, BYTES a 4-byte little-endian length then the bytes).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"
#include "tests/integration/temp_file.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;

constexpr size_t kObjectBytes = 16384;
constexpr size_t kOutputOffset = 8192;  // the output's place in the region
constexpr size_t kOutputBytes = 40;     // FP32 [1,10]

// A POSIX shared-memory object of the test's own, unlinked at the end.
class ShmObject {
 public:
  explicit ShmObject(size_t size)
      : key_("/tessera-test-" + std::to_string(::getpid()) + "-" + std::to_string(next_++)) {
    fd_ = ::shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd_ >= 0 && ::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~ShmObject() {
    if (fd_ < 0) return;
    ::close(fd_);
    ::shm_unlink(key_.c_str());
  }
  bool ok() const { return fd_ >= 0; }
  const std::string& key() const { return key_; }
  void write(size_t offset, const std::string& bytes) const {
    ASSERT_EQ(::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset)), ssize_t(bytes.size()));
  }
  std::string read(size_t offset, size_t size) const {
    std::string out(size, '\0');
    EXPECT_EQ(::pread(fd_, out.data(), size, static_cast<off_t>(offset)), ssize_t(size));
    return out;
  }
  void truncate(size_t size) const { ASSERT_EQ(::ftruncate(fd_, static_cast<off_t>(size)), 0); }

 private:
  static inline int next_ = 0;
  std::string key_;
  int fd_ = -1;
};

std::string le_floats(const std::vector<float>& values) {
  std::string out;
  for (float v : values) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  }
  return out;
}

std::vector<float> floats_le(const std::string& bytes) {
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) bits |= uint32_t{static_cast<unsigned char>(bytes[4 * i + b])} << (8 * b);
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

// One BYTES element as the raw layout has it.
std::string length_prefixed(const std::string& element) {
  std::string out;
  const auto n = static_cast<uint32_t>(element.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  return out + element;
}

json shm_params(const std::string& region, size_t byte_size, size_t offset = 0) {
  json p = {{"shared_memory_region", region}, {"shared_memory_byte_size", byte_size}};
  if (offset > 0) p["shared_memory_offset"] = offset;
  return p;
}

// An FP32 [1,1,28,28] input in `region` at 0 and the output into it at kOutputOffset.
json shm_tensor_body(const std::string& region, size_t input_bytes = 3136, size_t output_bytes = kOutputBytes) {
  return {{"inputs",
           {{{"name", "input"},
             {"datatype", "FP32"},
             {"shape", {1, 1, 28, 28}},
             {"parameters", shm_params(region, input_bytes)}}}},
          {"outputs", {{{"name", "probabilities"}, {"parameters", shm_params(region, output_bytes, kOutputOffset)}}}}};
}

class KserveSharedMemoryTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override { return {"--allow-client-shm", "true"}; }

  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 4u) << "too few images in " << TESSERA_FMNIST_DIR;
    client_ = std::make_unique<HttpClient>(daemon_->http_port());
    kserve_ = kserve_stub(*daemon_);
    object_ = std::make_unique<ShmObject>(kObjectBytes);
    if (!object_->ok()) GTEST_SKIP() << "shm_open/ftruncate failed (no /dev/shm?): " << std::strerror(errno);
  }

  HttpReply register_http(const std::string& name, const json& body) {
    return client_->post("/v2/systemsharedmemory/region/" + name + "/register", body.dump(), "application/json");
  }
  HttpReply register_http(const std::string& name, size_t offset = 0, size_t byte_size = kObjectBytes) {
    return register_http(name, {{"key", object_->key()}, {"offset", offset}, {"byte_size", byte_size}});
  }

  static void expect_error(const HttpReply& reply, int status, const std::string& says) {
    EXPECT_EQ(reply.status, status) << reply.error << reply.body;
    const json body = json::parse(reply.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << reply.body;
    EXPECT_NE(body["error"].get<std::string>().find(says), std::string::npos) << reply.body;
  }

  // The probabilities the daemon answers for `values` sent in the JSON body.
  std::vector<float> plain_answer(const std::vector<float>& values) {
    const json body = {
        {"inputs", {{{"name", "input"}, {"datatype", "FP32"}, {"shape", {1, 1, 28, 28}}, {"data", values}}}}};
    const HttpReply reply = client_->post(kFmnistInferPath, body.dump(), "application/json");
    EXPECT_EQ(reply.status, 200) << reply.body;
    if (reply.status != 200) return {};
    return json::parse(reply.body)["outputs"][0]["data"].get<std::vector<float>>();
  }

  grpc::Status register_grpc(const std::string& name, uint64_t offset, uint64_t byte_size,
                             const std::string& key = "") {
    inference::SystemSharedMemoryRegisterRequest request;
    request.set_name(name);
    request.set_key(key.empty() ? object_->key() : key);
    request.set_offset(offset);
    request.set_byte_size(byte_size);
    grpc::ClientContext context;
    inference::SystemSharedMemoryRegisterResponse response;
    return kserve_->SystemSharedMemoryRegister(&context, request, &response);
  }

  std::vector<FmnistImage> images_;
  std::unique_ptr<HttpClient> client_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
  std::unique_ptr<ShmObject> object_;
};

TEST_F(KserveSharedMemoryTest, HttpRegisterInferInRegionStatusUnregister) {
  const std::vector<float> input = preprocessed_input(read_binary(images_[0].png));
  ASSERT_EQ(input.size(), 784u);
  const std::vector<float> expected = plain_answer(input);
  ASSERT_EQ(expected.size(), 10u);
  object_->write(0, le_floats(input));
  // With --allow-client-shm the extension is listed (KserveConfigTest: not without).
  const json server = json::parse(client_->get("/v2").body);
  EXPECT_NE(std::find(server["extensions"].begin(), server["extensions"].end(), "system_shared_memory"),
            server["extensions"].end())
      << server.dump();

  HttpReply reply = register_http("io");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_TRUE(reply.body.empty()) << reply.body;
  reply = client_->get("/v2/systemsharedmemory/status");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(json::parse(reply.body),
            json::parse(R"([{"name":"io","key":")" + object_->key() + R"(","offset":0,"byte_size":16384}])"));
  reply = client_->get("/v2/systemsharedmemory/region/io/status");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(json::parse(reply.body).size(), 1u);

  reply = client_->post(kFmnistInferPath, shm_tensor_body("io").dump(), "application/json");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const json answer = json::parse(reply.body);
  ASSERT_EQ(answer["outputs"].size(), 1u) << reply.body;
  const json& out = answer["outputs"][0];
  EXPECT_EQ(out["name"], "probabilities");
  EXPECT_EQ(out["datatype"], "FP32");
  EXPECT_EQ(out["shape"], json({1, 10}));
  EXPECT_FALSE(out.contains("data")) << reply.body;
  EXPECT_EQ(floats_le(object_->read(kOutputOffset, kOutputBytes)), expected);

  reply = client_->post("/v2/systemsharedmemory/region/io/unregister", "", "application/json");
  EXPECT_EQ(reply.status, 200) << reply.body;
  reply = client_->get("/v2/systemsharedmemory/status");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(json::parse(reply.body), json::array());
  expect_error(client_->post(kFmnistInferPath, shm_tensor_body("io").dump(), "application/json"), 400, "io");
}

TEST_F(KserveSharedMemoryTest, GrpcRegisterImageInRegionOutputIntoIt) {
  const std::string image = read_binary(images_[1].png);
  const KserveAnswer plain = kserve_infer(*kserve_, bytes_request(image));
  ASSERT_TRUE(plain.status.ok()) << plain.status.error_message();
  const std::vector<float> expected = output_floats(plain.response);
  const std::string element = length_prefixed(image);
  ASSERT_LT(element.size(), kOutputOffset);
  object_->write(0, element);

  // The region starts 0 bytes in; a second one is a window further in.
  grpc::Status status = register_grpc("in", 0, element.size());
  ASSERT_TRUE(status.ok()) << status.error_message();
  status = register_grpc("out", kOutputOffset, 4096);
  ASSERT_TRUE(status.ok()) << status.error_message();

  inference::ModelInferRequest request;
  request.set_model_name(kFmnistModel);
  auto* input = request.add_inputs();
  input->set_name("image");
  input->set_datatype("BYTES");
  input->add_shape(1);
  (*input->mutable_parameters())["shared_memory_region"].set_string_param("in");
  (*input->mutable_parameters())["shared_memory_byte_size"].set_int64_param(int64_t(element.size()));
  auto* output = request.add_outputs();
  output->set_name("probabilities");
  (*output->mutable_parameters())["shared_memory_region"].set_string_param("out");
  (*output->mutable_parameters())["shared_memory_offset"].set_int64_param(100);
  (*output->mutable_parameters())["shared_memory_byte_size"].set_int64_param(kOutputBytes);
  const KserveAnswer answer = kserve_infer(*kserve_, request);
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  ASSERT_EQ(answer.response.outputs_size(), 1);
  EXPECT_EQ(answer.response.outputs(0).datatype(), "FP32");
  EXPECT_EQ(answer.response.outputs(0).shape_size(), 2);
  ASSERT_EQ(answer.response.raw_output_contents_size(), 1);
  EXPECT_TRUE(answer.response.raw_output_contents(0).empty());
  EXPECT_EQ(floats_le(object_->read(kOutputOffset + 100, kOutputBytes)), expected);

  grpc::ClientContext status_context;
  inference::SystemSharedMemoryStatusResponse regions;
  ASSERT_TRUE(kserve_->SystemSharedMemoryStatus(&status_context, {}, &regions).ok());
  ASSERT_EQ(regions.regions_size(), 2);
  EXPECT_EQ(regions.regions().at("out").key(), object_->key());
  EXPECT_EQ(regions.regions().at("out").offset(), kOutputOffset);
  EXPECT_EQ(regions.regions().at("out").byte_size(), 4096u);
  EXPECT_EQ(regions.regions().at("in").byte_size(), element.size());

  grpc::ClientContext unregister_context;
  inference::SystemSharedMemoryUnregisterResponse unregistered;
  ASSERT_TRUE(kserve_->SystemSharedMemoryUnregister(&unregister_context, {}, &unregistered).ok());
  grpc::ClientContext after_context;
  inference::SystemSharedMemoryStatusResponse after;
  ASSERT_TRUE(kserve_->SystemSharedMemoryStatus(&after_context, {}, &after).ok());
  EXPECT_EQ(after.regions_size(), 0);
  const KserveAnswer gone = kserve_infer(*kserve_, request);
  EXPECT_EQ(gone.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << gone.status.error_message();
}

TEST_F(KserveSharedMemoryTest, RegistrationErrorsInTritonsShapes) {
  ASSERT_EQ(register_http("r").status, 200);
  expect_error(register_http("r"), 400, "already in manager");
  expect_error(register_http("past", 0, kObjectBytes + 1), 400, "past the end");
  expect_error(register_http("past2", kObjectBytes, 1), 400, "past the end");
  expect_error(register_http("zero", 0, 0), 400, "byte_size");
  expect_error(register_http("nokey", {{"key", "/tessera-test-no-such-object"}, {"offset", 0}, {"byte_size", 8}}), 400,
               "Unable to open");
  for (const std::string key : {"/../etc/passwd", "/a/b", "/..", "noslash", "/"}) {
    expect_error(register_http("bad", {{"key", key}, {"offset", 0}, {"byte_size", 8}}), 400, "shared memory key");
  }
  expect_error(register_http("body", {{"offset", 0}, {"byte_size", 8}}), 400, "'key'");
  expect_error(register_http("body", {{"key", object_->key()}, {"byte_size", -1}}), 400, "byte_size");
  expect_error(client_->post("/v2/systemsharedmemory/region/x/register", "{not json", "application/json"), 400,
               "not valid JSON");
  expect_error(client_->get("/v2/systemsharedmemory/region/nope/status"), 404, "nope");
  EXPECT_EQ(client_->post("/v2/systemsharedmemory/region/nope/unregister", "", "").status, 200);
  expect_error(client_->get("/v2/systemsharedmemory/region/r/register"), 405, "POST");
  expect_error(client_->get("/v2/systemsharedmemory/nothing"), 404, "no such endpoint");

  EXPECT_EQ(register_grpc("r", 0, 8).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(register_grpc("g", 0, 8, "/x/y").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(register_grpc("g", 1, kObjectBytes).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext context;
  inference::SystemSharedMemoryStatusRequest unknown;
  unknown.set_name("nope");
  inference::SystemSharedMemoryStatusResponse response;
  EXPECT_EQ(kserve_->SystemSharedMemoryStatus(&context, unknown, &response).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(KserveSharedMemoryTest, InferenceErrorsAreBadRequests) {
  ASSERT_EQ(register_http("r").status, 200);
  auto infer = [&](const json& body) { return client_->post(kFmnistInferPath, body.dump(), "application/json"); };
  expect_error(infer(shm_tensor_body("unknown")), 400, "Unable to find shared memory region");
  expect_error(infer(shm_tensor_body("r", 3132)), 400, "FP32 shape needs 3136");
  expect_error(infer(shm_tensor_body("r", 3136, 36)), 400, "should be at least 40 bytes");
  json body = shm_tensor_body("r");
  body["inputs"][0]["parameters"]["shared_memory_offset"] = kObjectBytes;
  expect_error(infer(body), 400, "past region");
  body = shm_tensor_body("r");
  body["outputs"][0]["parameters"]["shared_memory_offset"] = kObjectBytes - 20;
  expect_error(infer(body), 400, "past region");
  body = shm_tensor_body("r");
  body["outputs"][0]["parameters"]["classification"] = 3;
  expect_error(infer(body), 400, "can't set both");
  body = shm_tensor_body("r");
  body["inputs"][0]["data"] = std::vector<float>(784, 0.0f);
  expect_error(infer(body), 400, "carries data too");
  body = shm_tensor_body("r");
  body["inputs"][0]["parameters"].erase("shared_memory_region");
  expect_error(infer(body), 400, "without 'shared_memory_region'");
  body = shm_tensor_body("r");
  body["inputs"][0]["parameters"].erase("shared_memory_byte_size");
  expect_error(infer(body), 400, "must be specified along");
  body = shm_tensor_body("r");
  body["inputs"][0]["parameters"]["shared_memory_byte_size"] = "3136";
  expect_error(infer(body), 400, "must be an integer");

  // The object cut short behind the server's back: a clear error, and the daemon lives on.
  object_->truncate(1024);
  expect_error(infer(shm_tensor_body("r")), 400, "truncated");
  EXPECT_EQ(client_->get("/v2/health/live").status, 200);
}

TEST_F(KserveSharedMemoryTest, GrpcInferenceErrorsAreInvalidArgument) {
  ASSERT_TRUE(register_grpc("r", 0, kObjectBytes).ok());
  inference::ModelInferRequest request;
  request.set_model_name(kFmnistModel);
  auto* input = request.add_inputs();
  input->set_name("input");
  input->set_datatype("FP32");
  for (int64_t d : {1, 1, 28, 28}) input->add_shape(d);
  auto& params = *input->mutable_parameters();
  params["shared_memory_region"].set_string_param("nope");
  params["shared_memory_byte_size"].set_int64_param(3136);
  auto expect_invalid = [&](const std::string& says) {
    const KserveAnswer answer = kserve_infer(*kserve_, request);
    EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << answer.status.error_message();
    EXPECT_NE(answer.status.error_message().find(says), std::string::npos) << answer.status.error_message();
  };
  expect_invalid("Unable to find shared memory region");
  params["shared_memory_region"].set_string_param("r");
  params["shared_memory_byte_size"].set_int64_param(100);
  expect_invalid("FP32 shape needs 3136");
  params["shared_memory_byte_size"].set_string_param("3136");
  expect_invalid("must be an integer");
  params["shared_memory_byte_size"].set_int64_param(3136);
  request.add_raw_input_contents(std::string(3136, '\0'));
  expect_invalid("carries data too");
}

// Without --allow-client-shm the extension answers that it is off, on both transports.
class KserveSharedMemoryOffTest : public DaemonTest {};

TEST_F(KserveSharedMemoryOffTest, OffByDefaultSaysHowToTurnItOn) {
  HttpClient client(daemon_->http_port());
  const HttpReply reply = client.post("/v2/systemsharedmemory/region/r/register",
                                      R"({"key":"/tessera-test-none","offset":0,"byte_size":8})", "application/json");
  EXPECT_EQ(reply.status, 400) << reply.body;
  EXPECT_NE(reply.body.find("--allow-client-shm"), std::string::npos) << reply.body;
  EXPECT_EQ(client.get("/v2/systemsharedmemory/status").status, 400);

  const auto kserve = kserve_stub(*daemon_);
  grpc::ClientContext context;
  inference::SystemSharedMemoryStatusResponse response;
  EXPECT_EQ(kserve->SystemSharedMemoryStatus(&context, {}, &response).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  const json server = json::parse(client.get("/v2").body);
  EXPECT_EQ(std::find(server["extensions"].begin(), server["extensions"].end(), "system_shared_memory"),
            server["extensions"].end())
      << server.dump();
}

constexpr const char* kShmToken = "shm-token-5b1c0e";

// With bearer tokens the REST routes want one, as every KServe route (gRPC: GrpcTokenDoorsTest
// enumerates every method, these included).
class KserveSharedMemoryAuthTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--allow-client-shm", "true", "--auth-tokens", tokens_.path.string()};
  }
  TempFile tokens_{std::string(kShmToken) + "\n"};
};

TEST_F(KserveSharedMemoryAuthTest, RoutesWantTheBearerToken) {
  const ShmObject object(64);
  if (!object.ok()) GTEST_SKIP() << "shm_open/ftruncate failed (no /dev/shm?)";
  HttpClient client(daemon_->http_port());
  const std::string target = "/v2/systemsharedmemory/region/r/register";
  const std::string body = json({{"key", object.key()}, {"offset", 0}, {"byte_size", 64}}).dump();
  EXPECT_EQ(client.post(target, body, "application/json").status, 401);
  EXPECT_EQ(client.get("/v2/systemsharedmemory/status").status, 401);
  client.set_header("Authorization", std::string("Bearer ") + kShmToken);
  EXPECT_EQ(client.post(target, body, "application/json").status, 200);
  const HttpReply status = client.get("/v2/systemsharedmemory/status");
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(json::parse(status.body).size(), 1u);
}

}  // namespace
}  // namespace tessera::testing
