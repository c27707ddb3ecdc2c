// The HTTP side: an acceptor and its io_context threads; each connection is an HttpSession.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "accel/common/status.h"
#include "server/http/session.h"
#include "server/http/types.h"

namespace tessera {

class HttpListener;

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IP address or a resolvable name
  int port = 8080;                 // 0 picks a free port
  int threads = 2;                 // io_context threads
  HttpSessionLimits limits;
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
  // Closes the acceptor; open connections carry on.
  void stop_accepting();
  // Stops the io_context and joins its threads; connections are dropped. Idempotent.
  void stop();

 private:
  explicit HttpServer(const HttpServerOptions& options);

  const HttpServerOptions options_;
  boost::asio::io_context ioc_;
  std::shared_ptr<HttpListener> listener_;
  std::vector<std::thread> threads_;
  int port_ = 0;
};

}  // namespace tessera
