#include "server/http_session.h"

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <string>
#include <utility>

#include "server/http_responses.h"

namespace tessera {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpSession::HttpSession(tcp::socket&& socket, const HttpSessionLimits& limits, HttpHandler& handler)
    : stream_(std::move(socket)), limits_(limits), handler_(handler) {}

void HttpSession::run() {
  // Start on the session's strand: the socket was accepted with one.
  net::dispatch(stream_.get_executor(),
                beast::bind_front_handler(&HttpSession::do_read, shared_from_this()));
}

void HttpSession::do_read() {
  parser_.emplace();
  parser_->body_limit(limits_.body_limit);
  stream_.expires_after(limits_.read_timeout);
  reading_ = true;
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&HttpSession::on_read, shared_from_this()));
}

void HttpSession::on_read(beast::error_code ec, size_t /*bytes*/) {
  reading_ = false;
  if (ec) {
    answer_read_error(ec);
    return;
  }
  HttpRequest request = parser_->release();
  const bool keep_alive = request.keep_alive();
  const uint64_t seq = add_pending(request.version(), keep_alive);
  if (!keep_alive) read_done_ = true;
  handler_.handle(std::move(request), responder_for(seq));
  maybe_read_more();
}

void HttpSession::answer_read_error(beast::error_code ec) {
  read_done_ = true;
  // Errors of Beast's HTTP parser are the peer's fault and get an answer; EOF, a request cut
  // short, resets and timeouts get none.
  const bool bad_request = ec.category() == http::make_error_code(http::error::body_limit).category() &&
                           ec != http::error::end_of_stream && ec != http::error::partial_message;
  if (!bad_request) {
    if (ec != http::error::end_of_stream && ec != beast::error::timeout) {
      spdlog::debug("http: read: {}", ec.message());
    }
    // Finish what is pending, then close.
    if (pending_.empty() && !writing_in_progress_) do_close();
    return;
  }
  beast::error_code ignored;
  const auto peer = stream_.socket().remote_endpoint(ignored);
  spdlog::warn("http {}:{}: refused request: {}", peer.address().to_string(), peer.port(), ec.message());
  const unsigned version = parser_ && parser_->is_header_done() ? parser_->get().version() : 11;
  HttpResponse response;
  if (ec == http::error::body_limit) {
    response = make_error_response(413, "INVALID_ARGUMENT",
                                   "the request body is larger than the limit of " +
                                       std::to_string(limits_.body_limit) + " bytes");
  } else if (ec == http::error::header_limit) {
    response = make_error_response(431, "INVALID_ARGUMENT", "the request header is too large");
  } else {
    response = make_error_response(400, "INVALID_ARGUMENT", "malformed HTTP request: " + ec.message());
  }
  on_answer(add_pending(version, false), std::move(response));
}

uint64_t HttpSession::add_pending(unsigned version, bool keep_alive) {
  pending_.push_back({version, keep_alive, std::nullopt});
  return front_seq_ + pending_.size() - 1;
}

HttpResponder HttpSession::responder_for(uint64_t seq) {
  return [self = shared_from_this(), seq](HttpResponse response) {
    net::post(self->stream_.get_executor(),
              [self, seq, response = std::move(response)]() mutable {
                self->on_answer(seq, std::move(response));
              });
  };
}

void HttpSession::on_answer(uint64_t seq, HttpResponse response) {
  const uint64_t index = seq - front_seq_;
  if (seq < front_seq_ || index >= pending_.size()) return;  // cannot happen: answered twice
  pending_[index].response = std::move(response);
  do_write();
}

void HttpSession::do_write() {
  if (writing_in_progress_ || closing_ || pending_.empty() || !pending_.front().response) return;
  Pending& front = pending_.front();
  writing_ = std::move(*front.response);
  writing_.version(front.version);
  writing_.keep_alive(front.keep_alive);
  pending_.pop_front();
  ++front_seq_;
  writing_in_progress_ = true;
  stream_.expires_after(limits_.write_timeout);
  http::async_write(stream_, writing_,
                    beast::bind_front_handler(&HttpSession::on_write, shared_from_this(),
                                              writing_.need_eof()));
}

void HttpSession::on_write(bool close, beast::error_code ec, size_t /*bytes*/) {
  writing_in_progress_ = false;
  if (ec) {
    // The connection is gone; answers still on their way find a closed socket and end there.
    spdlog::debug("http: write: {}", ec.message());
    closing_ = true;
    return;
  }
  if (close || (pending_.empty() && read_done_ && !reading_)) {
    read_done_ = true;
    do_close();
    return;
  }
  maybe_read_more();
  do_write();
}

void HttpSession::maybe_read_more() {
  if (!reading_ && !read_done_ && !closing_ && pending_.size() < limits_.max_in_flight) do_read();
}

void HttpSession::do_close() {
  if (closing_) return;
  closing_ = true;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return;
  stream_.expires_after(std::min<std::chrono::seconds>(limits_.read_timeout, std::chrono::seconds(5)));
  stream_.async_read_some(net::buffer(drain_buffer_),
                          beast::bind_front_handler(&HttpSession::on_drain, shared_from_this()));
}

void HttpSession::on_drain(beast::error_code ec, size_t /*bytes*/) {
  if (ec) {
    beast::error_code ignored;
    stream_.socket().close(ignored);
    return;
  }
  stream_.async_read_some(net::buffer(drain_buffer_),
                          beast::bind_front_handler(&HttpSession::on_drain, shared_from_this()));
}

}  // namespace tessera
