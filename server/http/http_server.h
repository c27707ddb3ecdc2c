// The HTTP side: an acceptor and its io_context threads; each connection is an HttpSession.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "accel/common/status.h"
#include "server/http/connection_count.h"
#include "server/http/session.h"
#include "server/http/types.h"

namespace tessera {

class HttpListener;

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IP address or a resolvable name
  int port = 8080;                 // 0 picks a free port
  int threads = 2;                 // io_context threads
  HttpSessionLimits limits;
  size_t max_connections = 1024;  // open at once; more are accepted and closed at once (counted as refused)
  std::shared_ptr<boost::asio::ssl::context> tls;  // set: HTTPS only (every connection starts with a TLS handshake)
};

class HttpServer {
 public:
  // Binds, listens and starts the threads; `handler` must outlive the server.
  static Result<std::unique_ptr<HttpServer>> start(const HttpServerOptions& options, HttpHandler& handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the real one when options.port was 0).
  int port() const { return port_; }
  // Closes the acceptor and returns once it is closed (at most ~2 s), the connections the listen
  // backlog already held accepted and served first; open connections carry on. Call it off the
  // server's threads.
  void stop_accepting();
  // Stops accepting; from now on every answer says "Connection: close" and closes its connection
  // once written (answers to requests already read still go out first).
  void start_draining();
  // Waits until every connection has closed; false when it gives up: once none has been busy (a
  // request body coming in, an answer owed) for `grace`, or at `deadline`.
  bool wait_until_closed(std::chrono::milliseconds grace, std::chrono::steady_clock::time_point deadline);
  // Connections open now, and refused since start (above max_connections).
  size_t open_connections() const { return connections_.open(); }
  uint64_t refused_connections() const { return connections_.refused(); }
  // Stops the io_context and joins its threads; connections are dropped. Idempotent.
  void stop();

 private:
  explicit HttpServer(const HttpServerOptions& options);

  const HttpServerOptions options_;
  HttpConnections connections_;  // before ioc_: the sessions the io_context holds keep slots of it
  boost::asio::io_context ioc_;
  // Keeps the threads running while no I/O is pending: once the acceptor is closed (draining), the
  // connections may all be waiting for answers from the batcher, which are posted to them later.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{ioc_.get_executor()};
  std::shared_ptr<HttpListener> listener_;
  std::vector<std::thread> threads_;
  int port_ = 0;
};

}  // namespace tessera
