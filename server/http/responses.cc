#include "server/http/responses.h"

#include <nlohmann/json.hpp>

#include "server/grpc/status_mapping.h"

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

HttpResponse make_error_response(unsigned http_status, std::string_view code, std::string_view message) {
  HttpResponse res = make_json_response(http_status, {{"error", {{"code", code}, {"message", message}}}});
  if (http_status == 503) res.set(http::field::retry_after, "1");
  return res;
}

HttpResponse make_error_response(const Status& status) {
  return make_error_response(http_status_for(status.code()), status_code_name(status.code()), status.message());
}

}  // namespace tessera
