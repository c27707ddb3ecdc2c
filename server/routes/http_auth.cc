#include "server/routes/http_auth.h"

#include "server/http/responses.h"

namespace tessera {
namespace http = boost::beast::http;

bool http_path_needs_token(std::string_view path) {
  if (path == "/v2/health/live" || path == "/v2/health/ready") return false;
  return path == "/v1" || path.starts_with("/v1/") || path == "/v2" || path.starts_with("/v2/") || path == "/metrics";
}

std::optional<HttpResponse> check_http_bearer(const HttpRequest& request, std::string_view path,
                                              const BearerTokens* tokens) {
  if (tokens == nullptr || !http_path_needs_token(path)) return std::nullopt;
  const auto field = request.find(http::field::authorization);
  // Two Authorization headers are refused whatever they hold: which one counts would be the
  // reader's choice (a proxy may check one and pass both).
  const size_t count = request.count(http::field::authorization);
  if (count == 1 && tokens->accepts_header(field->value())) return std::nullopt;
  std::string why = "the bearer token is not accepted";
  if (count == 0) why = "missing bearer token (header 'Authorization: Bearer <token>')";
  if (count > 1) {
    why = "more than one Authorization header (" + std::to_string(count) +
          "): send exactly one 'Authorization: Bearer <token>'";
  }
  HttpResponse res = make_error_response(401, "UNAUTHENTICATED", why);
  res.set(http::field::www_authenticate, "Bearer");
  return res;
}

}  // namespace tessera
