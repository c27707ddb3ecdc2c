#include "server/auth/http_auth.h"

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
  if (field != request.end() && tokens->accepts_header(field->value())) return std::nullopt;
  HttpResponse res =
      make_error_response(401, "UNAUTHENTICATED",
                          field == request.end() ? "missing bearer token (header 'Authorization: Bearer <token>')"
                                                 : "the bearer token is not accepted");
  res.set(http::field::www_authenticate, "Bearer");
  return res;
}

}  // namespace tessera
