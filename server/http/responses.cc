#include "server/http/responses.h"

#include <nlohmann/json.hpp>

namespace tessera {
namespace http = boost::beast::http;

HttpResponse make_json_response(unsigned status, const nlohmann::json& body) {
  // Replace, not throw, on invalid UTF-8 (labels and messages come from files and callers).
  return make_text_response(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                            "application/json");
}

HttpResponse make_text_response(unsigned status, std::string body, std::string_view content_type) {
  HttpResponse res{static_cast<http::status>(status), 11};
  res.set(http::field::server, "tesserad");
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

nlohmann::json tessera_error_body(std::string_view code, std::string_view message) {
  return {{"error", {{"code", code}, {"message", message}}}};
}

unsigned http_status_for(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kCancelled: return 499;  // client closed request (nginx, grpc-gateway)
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition: return 400;
    case StatusCode::kDeadlineExceeded: return 504;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kResourceExhausted: return 503;
    case StatusCode::kUnimplemented: return 501;
    case StatusCode::kInternal: return 500;
    case StatusCode::kUnavailable: return 503;
  }
  return 500;
}

HttpResponse make_error_response(unsigned http_status, std::string_view code, std::string_view message,
                                 ErrorBody body) {
  HttpResponse res = make_json_response(http_status, body(code, message));
  if (http_status == 503) res.set(http::field::retry_after, "1");
  return res;
}

HttpResponse make_error_response(const Status& status, ErrorBody body) {
  return make_error_response(http_status_for(status.code()), status_code_name(status.code()), status.message(), body);
}

HttpResponse method_not_allowed(std::string_view allow, ErrorBody body) {
  HttpResponse res =
      make_error_response(405, "INVALID_ARGUMENT", "method not allowed; use " + std::string(allow), body);
  res.set(http::field::allow, allow);
  return res;
}

bool is_get_or_head(http::verb method) { return method == http::verb::get || method == http::verb::head; }

HttpResponse answer_to(http::verb method, HttpResponse res) {
  if (method != http::verb::head) return res;
  const auto length = res.body().size();
  res.body().clear();
  res.content_length(length);
  return res;
}

}  // namespace tessera
