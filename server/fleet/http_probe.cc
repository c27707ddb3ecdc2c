#include "server/fleet/http_probe.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <memory>

namespace tessera::fleet {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;

// The exchange's state; each step's handler holds it. One deadline timer covers every step:
// when it fires it cancels the resolver and closes the socket, so the pending step ends.
class HttpGet : public std::enable_shared_from_this<HttpGet> {
 public:
  HttpGet(asio::io_context& ioc, const PeerAddress& peer, const std::string& target, std::chrono::milliseconds timeout,
          std::function<void(ProbeReply)> done)
      : resolver_(ioc), socket_(ioc), timer_(ioc), peer_(peer), timeout_(timeout), done_(std::move(done)) {
    request_.version(11);
    request_.method(http::verb::get);
    request_.target(target);
    request_.set(http::field::host, peer.port == 80 ? peer.host : peer.host + ":" + std::to_string(peer.port));
    request_.set(http::field::user_agent, "tesserad-fleet");
    request_.set(http::field::accept, "application/json");
    request_.set(http::field::connection, "close");
    parser_.body_limit(kMaxProbeBodyBytes);
  }

  void start() {
    timer_.expires_after(timeout_);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->finished_) return;
      self->timed_out_ = true;
      self->resolver_.cancel();
      error_code ignored;
      self->socket_.close(ignored);
    });
    resolver_.async_resolve(peer_.host, std::to_string(peer_.port),
                            [self = shared_from_this()](error_code ec, const tcp::resolver::results_type& results) {
                              self->on_resolve(ec, results);
                            });
  }

 private:
  void on_resolve(error_code ec, const tcp::resolver::results_type& results) {
    if (ec) return fail("resolve", ec);
    asio::async_connect(socket_, results, [self = shared_from_this()](error_code e, const tcp::endpoint&) {
      if (e) return self->fail("connect", e);
      http::async_write(self->socket_, self->request_, [self](error_code we, size_t) {
        if (we) return self->fail("send", we);
        http::async_read(self->socket_, self->buffer_, self->parser_, [self](error_code re, size_t) {
          if (re) return self->fail("read", re);
          ProbeReply reply;
          reply.status = static_cast<int>(self->parser_.get().result_int());
          reply.body = std::move(self->parser_.get().body());
          self->finish(std::move(reply));
        });
      });
    });
  }

  void fail(const char* step, error_code ec) {
    ProbeReply reply;
    reply.error = timed_out_ ? "no answer within " + std::to_string(timeout_.count()) + " ms"
                             : std::string(step) + ": " + ec.message();
    finish(std::move(reply));
  }

  void finish(ProbeReply reply) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    done_(std::move(reply));
  }

  tcp::resolver resolver_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  const PeerAddress peer_;
  const std::chrono::milliseconds timeout_;
  std::function<void(ProbeReply)> done_;
  http::request<http::empty_body> request_;
  boost::beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
  bool timed_out_ = false;
  bool finished_ = false;
};

}  // namespace

void async_http_get(asio::io_context& ioc, const PeerAddress& peer, const std::string& target,
                    std::chrono::milliseconds timeout, std::function<void(ProbeReply)> done) {
  std::make_shared<HttpGet>(ioc, peer, target, timeout, std::move(done))->start();
}

}  // namespace tessera::fleet
