// Building HTTP responses, for every family of routes (tessera's /v1, KServe's /v2): JSON and
// text bodies, errors with their mapped status, 405s, and HEAD answers.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

#include "accel/common/status.h"
#include "server/http/types.h"

namespace tessera {

HttpResponse make_json_response(unsigned status, const nlohmann::json& body);

HttpResponse make_text_response(unsigned status, std::string body,
                                std::string_view content_type = "text/plain; charset=utf-8");

// How a family of routes words an error's body. Tessera's is {"error":{"code","message"}};
// KServe's is {"error":"<message>"} (kserve/error_json.h).
using ErrorBody = nlohmann::json (*)(std::string_view code, std::string_view message);
nlohmann::json tessera_error_body(std::string_view code, std::string_view message);

// HTTP status for a code: 200 OK, 400 invalid, 404 not found, 503 busy/unavailable,
// 504 deadline, 500 internal, 501 unimplemented (499 cancelled, 409 already exists).
unsigned http_status_for(StatusCode code);

// Status -> its mapped HTTP status; 503 carries Retry-After: 1.
HttpResponse make_error_response(const Status& status, ErrorBody body = tessera_error_body);

// An error with an explicit HTTP status (413, 405) and code name; 503 carries Retry-After: 1.
HttpResponse make_error_response(unsigned http_status, std::string_view code, std::string_view message,
                                 ErrorBody body = tessera_error_body);

// 405 "method not allowed; use <allow>", with the Allow header.
HttpResponse method_not_allowed(std::string_view allow, ErrorBody body = tessera_error_body);

// GET or HEAD: the methods every read-only route takes.
bool is_get_or_head(boost::beast::http::verb method);

// `res` as the answer to a request made with `method`: for HEAD, the GET answer's headers
// (Content-Length included) without the body.
HttpResponse answer_to(boost::beast::http::verb method, HttpResponse res);

}  // namespace tessera
