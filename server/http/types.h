// The HTTP message types the server uses, and the interface the routes implement.
#pragma once

#include <boost/beast/http.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace tessera {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
using HttpRequestHeader = boost::beast::http::request_header<>;

// What keeps an event stream (server-sent events) going: the session asks it for the next
// event right after the head and then every interval(), on the session's strand; no thread
// waits in between. Destroyed when the stream ends, whatever ended it.
class HttpEventSource {
 public:
  virtual ~HttpEventSource() = default;
  // The next chunk of the body, or nullopt when the stream is over (the session then ends the
  // chunked body and closes the connection).
  virtual std::optional<std::string> next() = 0;
  virtual std::chrono::milliseconds interval() const = 0;
  // Called once, before the first next(): calling `wake` (from any thread, while the source
  // lives) makes the session call next() at once instead of at the end of the interval.
  virtual void set_wake(std::function<void()> wake) = 0;
};

// An answer that goes on: `head` (status and headers; its body is ignored) sent with chunked
// transfer encoding, then the source's events. The connection closes after it.
struct HttpEventStream {
  HttpResponse head;
  std::unique_ptr<HttpEventSource> source;
};

// Takes the answer to one request: a whole response, or an event stream where the transport
// offers one. May be called from any thread, exactly once.
class HttpResponder {
 public:
  using Reply = std::function<void(HttpResponse)>;
  using Stream = std::function<void(HttpEventStream)>;

  // Any callable taking an HttpResponse (no event streams then).
  template <class F>
  requires(!std::same_as<std::remove_cvref_t<F>, HttpResponder> && std::invocable<F&, HttpResponse>)
      HttpResponder(F reply)
      : reply_(std::move(reply)) {}  // NOLINT: implicit, as the std::function it was
  HttpResponder(Reply reply, Stream stream) : reply_(std::move(reply)), stream_(std::move(stream)) {}

  void operator()(HttpResponse response) const { reply_(std::move(response)); }
  // Without a stream taker the head alone is the answer, turned into a 501.
  void operator()(HttpEventStream stream) const {
    if (stream_) return stream_(std::move(stream));
    HttpResponse res = std::move(stream.head);
    res.result(boost::beast::http::status::not_implemented);
    res.set(boost::beast::http::field::content_type, "text/plain; charset=utf-8");
    res.body() = "event streams are not available on this connection\n";
    res.prepare_payload();
    reply_(std::move(res));
  }

 private:
  Reply reply_;
  Stream stream_;
};

// Answers requests; the session does the I/O, keep-alive and response ordering.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Must not block on slow work: answer inline, or later from another thread.
  virtual void handle(HttpRequest request, HttpResponder respond) = 0;
  // The largest body the request with this `header` may have, at most `limit` (the connection's);
  // asked before the body is read, so a route that takes small bodies never buffers a large one.
  virtual uint64_t body_limit(const HttpRequestHeader& /*header*/, uint64_t limit) const { return limit; }
};

}  // namespace tessera
