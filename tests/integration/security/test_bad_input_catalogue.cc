// The bad-input catalogue (issue 15, point 5), part 1: images, bodies and the HTTP transport.
// Each probe is sent to a real tesserad and must get the answer named in its test; then the same
// daemon must still classify (expect_still_serves). Part 2, test_bad_input_catalogue_calls.cc:
// KServe tensors, unknown models, deadlines, cancelled calls, streams that never read, tokens.
// Several probes are also tested in depth elsewhere (named per test); here each is listed once.
//
//   probe                                   answer
//   zero-byte image                         400 / INVALID_ARGUMENT "empty"
//   truncated PNG, truncated JPEG           400 / INVALID_ARGUMENT
//   random bytes                            400 / INVALID_ARGUMENT "not a JPEG or PNG image"
//   PNG declaring 100000 x 100000           400 / INVALID_ARGUMENT "limit", before decoding
//   PNG declaring 16000 x 16000 (256 Mpx)   400 / INVALID_ARGUMENT "pixels; the limit"
//   JPEG declaring 60000 x 60000            400 / INVALID_ARGUMENT "limit", before decoding
//   GIF, BMP, WebP, TIFF                    400 / INVALID_ARGUMENT naming the format or "not a JPEG or PNG"
//   16-bit PNG                              200: classified like its 8-bit twin
//   CMYK JPEG                               400 / INVALID_ARGUMENT "CMYK"
//   body over --max-image-bytes             413 (connection closed) / INVALID_ARGUMENT
//   malformed multipart                     400 "multipart"
//   path traversal on the static files      404, never a file outside web/
//   100 KB request header                   431
//   slow client (half a request)            closed after --http-read-timeout-s; others served meanwhile
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "tests/common/test_images.h"
#include "tests/integration/kserve_client.h"
#include "tests/integration/raw_connection.h"
#include "tests/integration/security/bad_input_catalogue.h"

namespace tessera::testing {
namespace {

using test_images::as_string;
using test_images::Bytes;

Bytes as_bytes(const std::string& text) { return {text.begin(), text.end()}; }

// Also: ImageDecodeErrorTest.* (unit), GrpcTest.EmptyImageIsInvalidArgument.
TEST_F(BadInputCatalogue, ZeroByteImage) {
  expect_http(http_->post("/v1/classify", "", "image/png"), 400, "empty");
  expect_grpc(classify_grpc(*stub_, ""), grpc::StatusCode::INVALID_ARGUMENT, "empty");
  expect_still_serves();
}

TEST_F(BadInputCatalogue, TruncatedPngAndJpeg) {
  expect_image_refused(png_.substr(0, png_.size() / 2), "PNG");
  expect_image_refused(jpeg_.substr(0, jpeg_.size() / 2), "JPEG");
  expect_still_serves();
}

// Also: GrpcTest.CorruptImageIsInvalidArgument, HttpTest.CorruptImageIs400WithAMessage.
TEST_F(BadInputCatalogue, RandomBytes) {
  std::string noise(4096, '\0');
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>((i * 2654435761u) >> 13);
  expect_image_refused(noise, "not a JPEG or PNG image");
  expect_still_serves();
}

// Decompression bombs: tiny files whose headers declare gigapixels. Refused from the header,
// at once (no allocation of the declared size: the answer comes in well under a second).
TEST_F(BadInputCatalogue, PngAndJpegBombs) {
  const auto start = std::chrono::steady_clock::now();
  expect_image_refused(as_string(test_images::with_png_size(as_bytes(png_), 100000, 100000)),
                       "100000x100000 pixels; the limit is 16384 pixels per side");
  expect_image_refused(as_string(test_images::with_png_size(as_bytes(png_), 16000, 16000)),
                       "16000x16000 = 256000000 pixels; the limit is 40000000 pixels");
  expect_image_refused(as_string(test_images::with_jpeg_size(as_bytes(jpeg_), 60000, 60000)),
                       "60000x60000 pixels; the limit is 16384 pixels per side");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  expect_still_serves();
}

// Also: ImageDecodeErrorTest.OtherFormatsAreNamed (unit).
TEST_F(BadInputCatalogue, UnsupportedFormats) {
  expect_image_refused(std::string("GIF89a\x01\x00\x01\x00\x00\x00\x00", 13), "GIF");
  expect_image_refused(std::string("BM\x3a\0\0\0\0\0\0\0\x36\0\0\0", 14), "BMP");
  expect_image_refused(std::string("RIFF\x24\0\0\0WEBPVP8 \x18\0\0\0", 20), "not a JPEG or PNG image");
  expect_image_refused(std::string("II*\0\x08\0\0\0\0\0", 10), "not a JPEG or PNG image");
  expect_still_serves();
}

// A 16-bit PNG is a valid image: decoded to its high bytes, it is the 8-bit image again.
TEST_F(BadInputCatalogue, SixteenBitPngIsClassifiedLikeItsEightBitTwin) {
  int width = 0;
  int height = 0;
  const std::vector<uint8_t> gray = decoded_gray_pixels(png_, &width, &height);
  std::vector<uint16_t> deep(gray.size());
  for (size_t i = 0; i < gray.size(); ++i) deep[i] = static_cast<uint16_t>(gray[i] * 257);
  const Bytes png16 = test_images::encode_png(static_cast<uint32_t>(width), static_cast<uint32_t>(height), 16,
                                              SPNG_COLOR_TYPE_GRAYSCALE, deep.data(), deep.size() * 2);
  const GrpcAnswer answer = classify_grpc(*stub_, as_string(png16));
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  EXPECT_EQ(answer.top1(), label_);
  expect_still_serves();
}

// Also: ImageJpegTest.RejectsCmyk (unit).
TEST_F(BadInputCatalogue, CmykJpeg) {
  const Bytes cmyk(28 * 28 * 4, 100);
  expect_image_refused(as_string(test_images::encode_jpeg(28, 28, TJPF_CMYK, cmyk, TJSAMP_444)), "CMYK");
  expect_still_serves();
}

// Also: HttpLimitTest.TooLargeBodyIs413, HttpLimitTest.TooLargeImageOverGrpcIsRefused.
TEST_F(BadInputCatalogue, BodyOverTheLimit) {
  const std::string big(kMaxImageBytes + 1, 'x');
  const HttpReply reply = http_->post("/v1/classify", big, "image/png");
  expect_http(reply, 413, "larger than the limit");
  EXPECT_FALSE(reply.keep_alive);
  expect_grpc(classify_grpc(*stub_, big), grpc::StatusCode::INVALID_ARGUMENT, "the limit is");
  // Far over it: gRPC refuses the message itself.
  const GrpcAnswer huge = classify_grpc(*stub_, std::string(4 << 20, 'x'));
  EXPECT_EQ(huge.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << huge.status.error_message();
  expect_still_serves();
}

// Also: MultipartTest.* (unit), HttpTest.MultipartFormClassifiesLikeTheRawBody.
TEST_F(BadInputCatalogue, MalformedMultipart) {
  const std::string part = "--b\r\nContent-Disposition: form-data; name=\"image\"; filename=\"x.png\"\r\n\r\n" + png_;
  const std::string form = "multipart/form-data; boundary=b";
  expect_http(http_->post("/v1/classify", part, form), 400, "multipart");  // never closed
  expect_http(http_->post("/v1/classify", part + "\r\n--b--\r\n", "multipart/form-data"), 400, "boundary");
  expect_http(http_->post("/v1/classify", "garbage", form), 400, "multipart");
  expect_http(http_->post("/v1/classify", "--b\r\n\r\n\r\n--b--\r\n", form), 400, "");  // a part without headers
  expect_still_serves();
}

// The static files are web/ and nothing else, however the path is spelled.
TEST_F(BadInputCatalogue, PathTraversalOnTheStaticFiles) {
  for (const char* target : {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                             "/..%2f..%2f..%2fetc%2fpasswd", "/%2E%2E%5C%2E%2E%5Cetc%5Cpasswd", "//etc/passwd",
                             "/index.html/../../../etc/passwd", "/%00../etc/passwd", "/web/../../README.md"}) {
    RawConnection raw(daemon_->http_port());
    ASSERT_TRUE(raw.connected());
    raw.send(std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    const std::string answer = raw.read_until_closed(std::chrono::seconds(5));
    const int status = http_status_of(answer);
    EXPECT_TRUE(status == 404 || status == 400) << target << " -> " << answer.substr(0, 200);
    EXPECT_EQ(answer.find("root:"), std::string::npos) << target;
    EXPECT_EQ(answer.find("# Tessera"), std::string::npos) << target;
  }
  expect_still_serves();
}

TEST_F(BadInputCatalogue, OversizedHeader) {
  RawConnection raw(daemon_->http_port());
  ASSERT_TRUE(raw.connected());
  raw.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100 << 10, 'a') + "\r\n\r\n");
  bool closed = false;
  const std::string answer = raw.read_until_closed(std::chrono::seconds(5), &closed);
  EXPECT_EQ(http_status_of(answer), 431) << answer.substr(0, 200);
  EXPECT_TRUE(closed);
  expect_still_serves();
}

// Slowloris: half a request, then nothing. The connection is closed after the read timeout (2 s
// here), and other clients are served meanwhile.
TEST_F(BadInputCatalogue, SlowClient) {
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(std::make_unique<RawConnection>(daemon_->http_port()));
    slow.back()->send("POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc");
  }
  expect_still_serves();
  const auto start = std::chrono::steady_clock::now();
  bool closed = false;
  slow.front()->read_until_closed(std::chrono::seconds(10), &closed);
  EXPECT_TRUE(closed) << "a slow client is cut off";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  expect_still_serves();
}

}  // namespace
}  // namespace tessera::testing
