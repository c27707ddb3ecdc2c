#include "server/http/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "server/http/rate_limited_log.h"

namespace tessera {
namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// How long the listener waits before accepting again when the process (or the system) is out of
// file descriptors: the connection waits in the kernel's backlog meanwhile.
constexpr std::chrono::milliseconds kAcceptBackoff{100};
// The least time between two log lines of a recurring accept error or refusal.
constexpr std::chrono::seconds kWarningInterval{10};

// Whether accept failed for want of a resource that frees up later (descriptors, buffers, memory).
bool out_of_resources(const beast::error_code& ec) {
  return ec == net::error::no_descriptors || ec == beast::errc::too_many_files_open_in_system ||
         ec == net::error::no_buffer_space || ec == net::error::no_memory;
}

// Accepts connections and starts a session, on its own strand, for each; refuses those above the
// connection bound, and backs off while out of descriptors.
class HttpListener : public std::enable_shared_from_this<HttpListener> {
 public:
  HttpListener(net::io_context& ioc, const HttpSessionLimits& limits, net::ssl::context* tls, HttpHandler& handler,
               HttpConnections& connections)
      : ioc_(ioc),
        acceptor_(net::make_strand(ioc)),
        backoff_(acceptor_.get_executor()),
        limits_(limits),
        tls_(tls),
        handler_(handler),
        connections_(connections) {}

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

  // Closes the listener; `closed` is set once it is. What the kernel had already taken into the
  // listen backlog is accepted and served first: closing over it would reset those connections,
  // and their requests would be lost.
  void close(std::shared_ptr<std::promise<void>> closed) {
    net::dispatch(acceptor_.get_executor(), [self = shared_from_this(), closed = std::move(closed)] {
      beast::error_code ec;
      self->acceptor_.non_blocking(true, ec);
      while (!ec && self->acceptor_.is_open()) {
        tcp::socket socket(net::make_strand(self->ioc_));
        self->acceptor_.accept(socket, ec);
        if (!ec) self->serve(std::move(socket));
      }
      self->acceptor_.close(ec);
      self->backoff_.cancel();
      closed->set_value();
    });
  }

 private:
  void do_accept() {
    acceptor_.async_accept(net::make_strand(ioc_),
                           beast::bind_front_handler(&HttpListener::on_accept, shared_from_this()));
  }

  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec && out_of_resources(ec)) {
      // Accepting again at once would fail again at once: a busy loop and a flood of log lines.
      accept_errors_.note("http: accept: " + ec.message() + "; accepting again every " +
                          std::to_string(kAcceptBackoff.count()) + " ms meanwhile");
      backoff_.expires_after(kAcceptBackoff);
      backoff_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
        if (!wait_ec && self->acceptor_.is_open()) self->do_accept();
      });
      return;
    }
    if (ec) {
      accept_errors_.note("http: accept: " + ec.message());
    } else {
      serve(std::move(socket));
    }
    do_accept();
  }

  // A session for an accepted connection, or its refusal past the --max-connections bound.
  void serve(tcp::socket socket) {
    if (ConnectionSlot slot = connections_.try_open()) {
      if (tls_ != nullptr) {
        start_https_session(std::move(socket), *tls_, limits_, handler_, std::move(slot));
      } else {
        start_http_session(std::move(socket), limits_, handler_, std::move(slot));
      }
      return;
    }
    // Closed at once: the peer sees the connection end before any answer, and nothing is read.
    beast::error_code ignored;
    socket.close(ignored);
    refusals_.note("http: refused a connection: " + std::to_string(connections_.max_open()) +
                   " are open, the --max-connections bound");
  }

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer backoff_;  // the pause after an accept that ran out of descriptors
  const HttpSessionLimits& limits_;
  net::ssl::context* tls_;  // null: plain HTTP
  HttpHandler& handler_;
  HttpConnections& connections_;
  RateLimitedWarning accept_errors_{kWarningInterval};
  RateLimitedWarning refusals_{kWarningInterval};
};

HttpServer::HttpServer(const HttpServerOptions& options)
    : options_(options), connections_(options.max_connections), ioc_(options.threads > 0 ? options.threads : 1) {}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options, HttpHandler& handler) {
  std::unique_ptr<HttpServer> server(new HttpServer(options));
  beast::error_code ec;
  tcp::resolver resolver(server->ioc_);
  const auto endpoints = resolver.resolve(options.host, std::to_string(options.port),
                                          tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return Status::invalid_argument("HTTP cannot resolve listen address '" + options.host + "': " + ec.message());
  }
  server->listener_ = std::make_shared<HttpListener>(server->ioc_, server->options_.limits, server->options_.tls.get(),
                                                     handler, server->connections_);
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
  if (!listener_) return;
  auto closed = std::make_shared<std::promise<void>>();
  std::future<void> done = closed->get_future();
  listener_->close(std::move(closed));
  // Called off the server's threads (the daemon's drain): the listener is closed before any
  // answer says "Connection: close", so a client that reconnects is refused at connect rather
  // than reset in the backlog. Bounded: the server's threads may be busy.
  if (done.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
    spdlog::warn("http: the listener did not close within 2 s");
  }
}

void HttpServer::start_draining() {
  stop_accepting();
  connections_.start_draining();
}

bool HttpServer::wait_until_closed(std::chrono::milliseconds grace, std::chrono::steady_clock::time_point deadline) {
  return connections_.wait_until_closed(grace, deadline);
}

void HttpServer::stop() {
  work_.reset();
  ioc_.stop();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

}  // namespace tessera
