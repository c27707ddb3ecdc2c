// multipart/form-data: the file part is found by name or by filename, as browsers and curl send
// it; every malformed body is a clear INVALID_ARGUMENT.
#include <gtest/gtest.h>

#include <string>

#include "server/http/multipart.h"

namespace tessera {
namespace {

const std::string kType = "multipart/form-data; boundary=----WebKitFormBoundaryX3bq";
const std::string kDelim = "------WebKitFormBoundaryX3bq";

std::string part(const std::string& disposition, const std::string& content, const std::string& type = "") {
  std::string p = kDelim + "\r\nContent-Disposition: form-data; " + disposition + "\r\n";
  if (!type.empty()) p += "Content-Type: " + type + "\r\n";
  return p + "\r\n" + content + "\r\n";
}

TEST(Multipart, RecognisesTheContentType) {
  EXPECT_TRUE(is_multipart_form(kType));
  EXPECT_TRUE(is_multipart_form("Multipart/Form-Data ;boundary=x"));
  EXPECT_FALSE(is_multipart_form("image/png"));
  EXPECT_FALSE(is_multipart_form(""));
}

TEST(Multipart, FindsTheImageFieldAmongOthers) {
  const std::string png("\x89PNG\r\n\x1a\n\0binary\r\n--not-a-boundary", 29);
  const std::string body =
      part("name=\"top_k\"", "3") + part("name=\"image\"; filename=\"boot.png\"", png, "image/png") + kDelim + "--\r\n";
  auto file = multipart_file(kType, body);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(std::string(*file), png) << "CRLF and dashes inside the content are kept";
}

TEST(Multipart, FallsBackToTheFirstFileAndAcceptsAQuotedBoundary) {
  const std::string body = part("name=\"note\"", "hello") + part("name=\"upload\"; filename=\"a.jpg\"", "JPEGDATA") +
                           part("name=\"other\"; filename=\"b.jpg\"", "SECOND") + kDelim + "--";
  auto file = multipart_file("multipart/form-data; boundary=\"----WebKitFormBoundaryX3bq\"", body);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(*file, "JPEGDATA");
}

TEST(Multipart, MalformedBodiesAreInvalidArgument) {
  auto expect_bad = [](const std::string& type, const std::string& body, const std::string& fragment) {
    auto r = multipart_file(type, body);
    ASSERT_FALSE(r.is_ok()) << body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  };
  expect_bad("multipart/form-data", "x", "boundary");
  expect_bad(kType, "no delimiter at all", "boundary");
  expect_bad(kType, kDelim + "\r\nContent-Disposition: form-data; name=\"image\"\r\nno header end", "header end");
  expect_bad(kType, part("name=\"image\"", "cut short"), "closing delimiter");
  expect_bad(kType, part("name=\"note\"", "text only") + kDelim + "--", "no 'image' field");
  expect_bad(kType, kDelim + "garbage", "delimiter line");
}

}  // namespace
}  // namespace tessera
