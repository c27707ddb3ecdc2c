// The bearer-token check of the HTTP side, applied once in HttpRoutes::handle before any route:
// which paths need a token, and the 401 answer for those that lack one.
#pragma once

#include <optional>
#include <string_view>

#include "server/auth/bearer_tokens.h"
#include "server/http/types.h"

namespace tessera {

// Inference, models, telemetry and metrics do (/v1/..., /metrics, /v2/... but the two KServe
// health probes); health (/healthz, /v2/health/live, /v2/health/ready) and the web UI's static
// files do not.
bool http_path_needs_token(std::string_view path);

// nullopt when the request may go on (no tokens configured, an open path, or an accepted
// "Authorization: Bearer <token>"); otherwise the 401 answer, with "WWW-Authenticate: Bearer".
std::optional<HttpResponse> check_http_bearer(const HttpRequest& request, std::string_view path,
                                              const BearerTokens* tokens);

}  // namespace tessera
