// The HTTP message types the server uses, and the interface the routes implement.
#pragma once

#include <boost/beast/http.hpp>

#include <functional>

namespace tessera {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Takes the response to one request; may be called from any thread, exactly once.
using HttpResponder = std::function<void(HttpResponse)>;

// Answers requests; the session does the I/O, keep-alive and response ordering.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Must not block on slow work: answer inline, or later from another thread.
  virtual void handle(HttpRequest request, HttpResponder respond) = 0;
};

}  // namespace tessera
