#include "server/http/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>

#include <utility>

namespace tessera {
namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// Accepts connections and starts a session, on its own strand, for each.
class HttpListener : public std::enable_shared_from_this<HttpListener> {
 public:
  HttpListener(net::io_context& ioc, const HttpSessionLimits& limits, net::ssl::context* tls, HttpHandler& handler)
      : ioc_(ioc), acceptor_(net::make_strand(ioc)), limits_(limits), tls_(tls), handler_(handler) {}

  Status listen(const tcp::endpoint& endpoint) {
    beast::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status::unavailable("HTTP cannot listen on " + endpoint.address().to_string() + ":" +
                                 std::to_string(endpoint.port()) + ": " + ec.message());
    }
    return Status::ok();
  }

  int port() const { return acceptor_.local_endpoint().port(); }

  void run() {
    net::dispatch(acceptor_.get_executor(), beast::bind_front_handler(&HttpListener::do_accept, shared_from_this()));
  }

  void close() {
    net::dispatch(acceptor_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->acceptor_.close(ignored);
    });
  }

 private:
  void do_accept() {
    acceptor_.async_accept(net::make_strand(ioc_),
                           beast::bind_front_handler(&HttpListener::on_accept, shared_from_this()));
  }

  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      spdlog::warn("http: accept: {}", ec.message());
    } else {
      if (tls_ != nullptr) {
        start_https_session(std::move(socket), *tls_, limits_, handler_);
      } else {
        start_http_session(std::move(socket), limits_, handler_);
      }
    }
    do_accept();
  }

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  const HttpSessionLimits& limits_;
  net::ssl::context* tls_;  // null: plain HTTP
  HttpHandler& handler_;
};

HttpServer::HttpServer(const HttpServerOptions& options)
    : options_(options), ioc_(options.threads > 0 ? options.threads : 1) {}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options, HttpHandler& handler) {
  std::unique_ptr<HttpServer> server(new HttpServer(options));
  beast::error_code ec;
  tcp::resolver resolver(server->ioc_);
  const auto endpoints = resolver.resolve(options.host, std::to_string(options.port),
                                          tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return Status::invalid_argument("HTTP cannot resolve listen address '" + options.host + "': " + ec.message());
  }
  server->listener_ =
      std::make_shared<HttpListener>(server->ioc_, server->options_.limits, server->options_.tls.get(), handler);
  TESSERA_RETURN_IF_ERROR(server->listener_->listen(endpoints.begin()->endpoint()));
  server->port_ = server->listener_->port();
  server->listener_->run();
  const int threads = options.threads > 0 ? options.threads : 1;
  for (int i = 0; i < threads; ++i) {
    server->threads_.emplace_back([ioc = &server->ioc_] { ioc->run(); });
  }
  return server;
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::stop_accepting() {
  if (listener_) listener_->close();
}

void HttpServer::stop() {
  ioc_.stop();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

}  // namespace tessera
