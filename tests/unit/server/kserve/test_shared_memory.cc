// The system shared-memory registry (server/kserve/shared_memory.h) and its data path
// (shared_memory_params.h) over shared-memory objects the test creates: registration and its
// errors, the limits, the key rule, a truncated object, a region kept by a request after it is
// unregistered, and the tensor parameters as both transports carry them.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>

#include "server/kserve/infer_response.h"
#include "server/kserve/shared_memory.h"
#include "server/kserve/shared_memory_params.h"

namespace tessera::kserve {
namespace {

using nlohmann::json;

// A shared-memory object of the test's own, unlinked at the end.
class TestObject {
 public:
  explicit TestObject(size_t size)
      : key_("/tessera-unit-" + std::to_string(::getpid()) + "-" + std::to_string(next_++)) {
    fd_ = ::shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd_ >= 0 && ::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~TestObject() {
    if (fd_ < 0) return;
    ::close(fd_);
    ::shm_unlink(key_.c_str());
  }
  bool ok() const { return fd_ >= 0; }
  const std::string& key() const { return key_; }
  int fd() const { return fd_; }

 private:
  static inline int next_ = 0;
  std::string key_;
  int fd_ = -1;
};

SharedMemoryLimits allowed(size_t regions = 8, uint64_t bytes = 1 << 20) { return {true, regions, bytes}; }

class SharedMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!object_.ok()) GTEST_SKIP() << "shm_open/ftruncate failed (no /dev/shm?): " << std::strerror(errno);
  }
  RegionStatus region(const std::string& name, uint64_t offset, uint64_t size) const {
    return {name, object_.key(), offset, size};
  }
  TestObject object_{4096};
};

TEST_F(SharedMemoryTest, RegistersListsAndUnregisters) {
  SharedMemoryRegistry registry(allowed());
  ASSERT_TRUE(registry.register_region(region("b", 100, 200)).is_ok());
  ASSERT_TRUE(registry.register_region(region("a", 0, 4096)).is_ok());
  auto all = registry.status("");
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "a");
  EXPECT_EQ((*all)[1].name, "b");
  EXPECT_EQ((*all)[1].offset, 100u);
  EXPECT_EQ((*all)[1].byte_size, 200u);
  EXPECT_EQ((*all)[1].key, object_.key());

  EXPECT_EQ(registry.register_region(region("a", 0, 8)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.status("zzz").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(registry.unregister("zzz").is_ok());  // Triton's answer too
  EXPECT_TRUE(registry.unregister("a").is_ok());
  ASSERT_EQ(registry.status("").value().size(), 1u);
  EXPECT_TRUE(registry.unregister("").is_ok());
  EXPECT_TRUE(registry.status("").value().empty());
}

TEST_F(SharedMemoryTest, RefusesWindowsPastTheObjectAndBadKeys) {
  SharedMemoryRegistry registry(allowed());
  EXPECT_EQ(registry.register_region(region("r", 0, 4097)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.register_region(region("r", 4096, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.register_region(region("r", UINT64_MAX, 2)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.register_region(region("r", 0, 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.register_region(region("", 0, 8)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.register_region({"r", "/tessera-unit-none", 0, 8}).code(), StatusCode::kInvalidArgument);
  for (const char* key : {"", "/", "x", "/a/b", "/..", "/.", "../x", "//x"}) {
    EXPECT_EQ(check_shm_key(key).code(), StatusCode::kInvalidArgument) << key;
  }
  EXPECT_EQ(check_shm_key(std::string("/a\0b", 4)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(check_shm_key("/" + std::string(255, 'x')).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(check_shm_key("/triton_shm-0.1").is_ok());
  EXPECT_TRUE(registry.status("").value().empty());
}

TEST_F(SharedMemoryTest, OffUnlessAllowedAndBoundedInCountAndBytes) {
  SharedMemoryRegistry off(SharedMemoryLimits{});
  EXPECT_EQ(off.register_region(region("r", 0, 8)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(off.status("").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(off.find("r").status().code(), StatusCode::kFailedPrecondition);

  SharedMemoryRegistry two(allowed(2, 1000));
  ASSERT_TRUE(two.register_region(region("a", 0, 600)).is_ok());
  EXPECT_EQ(two.register_region(region("b", 0, 401)).code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(two.register_region(region("b", 0, 400)).is_ok());
  EXPECT_EQ(two.register_region(region("c", 0, 1)).code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(two.unregister("a").is_ok());
  EXPECT_TRUE(two.register_region(region("c", 0, 600)).is_ok());
}

TEST_F(SharedMemoryTest, ReadsAndWritesInsideTheWindowOnly) {
  SharedMemoryRegistry registry(allowed());
  ASSERT_TRUE(registry.register_region(region("r", 1000, 100)).is_ok());
  auto r = registry.find("r");
  ASSERT_TRUE(r.is_ok());
  ASSERT_TRUE((*r)->write(10, "hello").is_ok());
  char check[5];
  ASSERT_EQ(::pread(object_.fd(), check, 5, 1010), 5);
  EXPECT_EQ(std::string(check, 5), "hello");
  EXPECT_EQ((*r)->read(10, 5).value(), "hello");
  EXPECT_EQ((*r)->read(96, 5).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*r)->write(99, "ab").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*r)->read(UINT64_MAX, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.find("none").status().code(), StatusCode::kInvalidArgument);
}

// No mapping: an object cut short after registration is an error on access, never SIGBUS.
TEST_F(SharedMemoryTest, TruncatedObjectIsAnErrorNotACrash) {
  SharedMemoryRegistry registry(allowed());
  ASSERT_TRUE(registry.register_region(region("r", 0, 4096)).is_ok());
  auto r = registry.find("r").value();
  ASSERT_EQ(::ftruncate(object_.fd(), 100), 0);
  const auto read = r->read(0, 4096);
  ASSERT_FALSE(read.is_ok());
  EXPECT_NE(read.status().message().find("truncated"), std::string::npos) << read.status().message();
  EXPECT_FALSE(r->write(200, "x").is_ok());
  EXPECT_TRUE(r->read(0, 100).is_ok());
}

// A request that holds a region keeps it usable after the client unregisters it.
TEST_F(SharedMemoryTest, HeldRegionOutlivesUnregister) {
  SharedMemoryRegistry registry(allowed());
  ASSERT_TRUE(registry.register_region(region("r", 0, 64)).is_ok());
  auto held = registry.find("r").value();
  ASSERT_TRUE(registry.unregister("").is_ok());
  EXPECT_FALSE(registry.find("r").is_ok());
  EXPECT_TRUE(held->write(0, "still here").is_ok());
  EXPECT_EQ(held->read(0, 10).value(), "still here");
}

TEST_F(SharedMemoryTest, TensorParametersFromBothTransports) {
  ProtoParameters proto;
  EXPECT_FALSE(shm_ref(proto, "p").value().has_value());
  proto["shared_memory_region"].set_string_param("r");
  EXPECT_NE(shm_ref(proto, "p").status().message().find("must be specified along"), std::string::npos);
  proto["shared_memory_byte_size"].set_int64_param(40);
  proto["shared_memory_offset"].set_uint64_param(8);
  auto ref = shm_ref(proto, "p").value();
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->region, "r");
  EXPECT_EQ(ref->byte_size, 40u);
  EXPECT_EQ(ref->offset, 8u);
  proto["shared_memory_offset"].set_int64_param(-1);
  EXPECT_NE(shm_ref(proto, "p").status().message().find("negative"), std::string::npos);
  proto["shared_memory_offset"].set_bool_param(true);
  EXPECT_EQ(shm_ref(proto, "p").status().code(), StatusCode::kInvalidArgument);
  proto.erase("shared_memory_region");
  EXPECT_NE(shm_ref(proto, "p").status().message().find("without"), std::string::npos);

  json params = {{"shared_memory_region", "r"}, {"shared_memory_byte_size", 40}};
  ref = shm_ref(&params, "p").value();
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->offset, 0u);
  params["shared_memory_region"] = 5;
  EXPECT_NE(shm_ref(&params, "p").status().message().find("must be a string"), std::string::npos);
  params = {{"shared_memory_region", "r"}, {"shared_memory_byte_size", 1.5}};
  EXPECT_FALSE(shm_ref(&params, "p").is_ok());
  params = {{"shared_memory_region", "r"}, {"shared_memory_byte_size", UINT64_MAX}};
  EXPECT_FALSE(shm_ref(&params, "p").is_ok());
  EXPECT_FALSE(shm_ref(static_cast<const json*>(nullptr), "p").value().has_value());
}

TEST_F(SharedMemoryTest, OutputsAreCheckedThenWrittenWithoutTheirData) {
  SharedMemoryRegistry registry(allowed());
  ASSERT_TRUE(registry.register_region(region("r", 0, 64)).is_ok());
  ModelSignature model;
  model.num_classes = 2;
  ShmRequest shm{&registry, {}};
  RequestedOutput out{model.output_name, 0, std::nullopt, false};
  EXPECT_FALSE(add_shm_output(&shm, ShmRef{"r", 0, 7}, out, model, 1, "o").is_ok());   // needs 8 bytes
  EXPECT_FALSE(add_shm_output(&shm, ShmRef{"r", 0, 15}, out, model, 2, "o").is_ok());  // two images: 16
  EXPECT_FALSE(add_shm_output(&shm, ShmRef{"r", 60, 8}, out, model, 1, "o").is_ok());  // past the region
  EXPECT_FALSE(add_shm_output(&shm, ShmRef{"r", 64, 8}, out, model, 1, "o").is_ok());  // offset past it
  EXPECT_FALSE(add_shm_output(&shm, ShmRef{"x", 0, 8}, out, model, 1, "o").is_ok());   // not registered
  RequestedOutput classification{out.name, 1, std::nullopt, false};
  EXPECT_FALSE(add_shm_output(&shm, ShmRef{"r", 0, 8}, classification, model, 1, "o").is_ok());
  EXPECT_FALSE(add_shm_output(nullptr, ShmRef{"r", 0, 8}, out, model, 1, "o").is_ok());
  EXPECT_FALSE(out.shared_memory);
  ASSERT_TRUE(add_shm_output(&shm, ShmRef{"r", 16, 16}, out, model, 2, "o").is_ok());
  ASSERT_EQ(shm.outputs.size(), 1u);
  EXPECT_TRUE(out.shared_memory);

  // Two images' rows go into the region, in request order.
  const ImageScores scores = {{0.25f, 0.75f}, {0.5f, 0.125f}};
  ASSERT_TRUE(write_shm_outputs(shm, scores).is_ok());
  char raw[16];
  ASSERT_EQ(::pread(object_.fd(), raw, 16, 16), 16);
  float back[4];
  std::memcpy(back, raw, 16);  // the test's machine is little-endian, as the protocol's bytes are
  EXPECT_EQ(back[0], 0.25f);
  EXPECT_EQ(back[1], 0.75f);
  EXPECT_EQ(back[2], 0.5f);
  EXPECT_EQ(back[3], 0.125f);

  // The response names the output without its data, on both transports.
  InferRequest request;
  request.outputs = {out};
  request.outputs[0].binary = true;  // the region wins over binary data
  const json body = infer_response_json(request, model, scores);
  EXPECT_FALSE(body["outputs"][0].contains("data"));
  EXPECT_EQ(body["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(body["outputs"][0]["shape"], json::array({2, 2}));
  const HttpInferBody http = infer_response_http(request, model, scores);
  EXPECT_FALSE(http.binary);
  EXPECT_EQ(http.json_length, http.body.size());
  const inference::ModelInferResponse response = make_infer_response(request, model, scores);
  ASSERT_EQ(response.raw_output_contents_size(), 1);
  EXPECT_TRUE(response.raw_output_contents(0).empty());
}

TEST_F(SharedMemoryTest, InputBytesFromTheRegionInTheRawLayout) {
  SharedMemoryRegistry registry(allowed());
  ASSERT_TRUE(registry.register_region(region("r", 0, 64)).is_ok());
  ASSERT_EQ(::pwrite(object_.fd(),
                     "\x03\x00\x00\x00"
                     "abc",
                     7, 0),
            7);
  ShmRequest shm{&registry, {}};
  EXPECT_FALSE(shm_input_bytes(&shm, std::nullopt, true, "i").value().has_value());
  EXPECT_FALSE(shm_input_bytes(&shm, ShmRef{"r", 0, 7}, true, "i").is_ok());  // data too
  EXPECT_EQ(shm_input_bytes(&shm, ShmRef{"r", 0, 7}, false, "i").value().value(), std::string("\x03\0\0\0abc", 7));

  InputLayout pixels;
  pixels.kind = InputKind::kPixels;
  pixels.height = 2;
  pixels.width = 2;
  pixels.channels = 1;
  pixels.elements = 4;
  std::vector<InferInput> images;
  EXPECT_FALSE(set_from_raw(images, pixels, "abc", false, "f", {}).is_ok());
  ASSERT_TRUE(set_from_raw(images, pixels, "abcd", false, "f", {}).is_ok());
  ASSERT_EQ(images.size(), 1u);
  EXPECT_EQ(images[0].pixels.pixels, std::vector<uint8_t>({'a', 'b', 'c', 'd'}));

  InputLayout image;
  image.kind = InputKind::kEncodedImage;
  image.elements = 1;
  // A BYTES element that is no image, and a length prefix past the bytes.
  const Status not_image = set_from_raw(images, image, std::string("\x03\0\0\0abc", 7), false, "f", {});
  EXPECT_NE(not_image.message().find("not a JPEG or PNG"), std::string::npos) << not_image.message();
  const Status cut = set_from_raw(images, image, std::string("\x09\0\0\0abc", 7), false, "f", {});
  EXPECT_NE(cut.message().find("declares 9 bytes"), std::string::npos) << cut.message();
}

}  // namespace
}  // namespace tessera::kserve
