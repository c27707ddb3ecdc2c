#include "server/http/session.h"

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "server/http/connection.h"
#include "server/http/event_stream_session.h"
#include "server/http/responses.h"

namespace tessera {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

// One connection over `Stream` (PlainStream or TlsStream): reads requests, hands each to the
// handler and writes the answers in request order. Everything runs on the connection's strand.
// When the answer due next is an event stream, the connection goes to an EventStreamSession.
template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  // `stream_args` construct the stream: the socket, plus the SSL context for TLS.
  template <class... StreamArgs>
  HttpSession(const HttpSessionLimits& limits, HttpHandler& handler, ConnectionSlot slot, StreamArgs&&... stream_args)
      : stream_(std::forward<StreamArgs>(stream_args)...),
        strand_(stream_.get_executor()),
        limits_(limits),
        handler_(handler),
        slot_(std::move(slot)) {}

  ~HttpSession() {
    if (busy_ && slot_) slot_->busy_changed(false);
  }

  void run() {
    // Start on the session's strand: the socket was accepted with one.
    net::dispatch(strand_, beast::bind_front_handler(&HttpSession::on_run, this->shared_from_this()));
  }

 private:
  // A request read and not yet answered on the wire; the front of the deque is written next.
  struct Pending {
    unsigned version = 11;
    bool keep_alive = false;
    std::optional<HttpResponse> response;
    std::optional<HttpEventStream> stream;
    BodyBudget::Reservation body;  // the request body's share of the daemon's budget, until answered
  };

  PlainStream& lowest() { return beast::get_lowest_layer(stream_); }

  void on_run() {
    if constexpr (kIsTls<Stream>) {
      lowest().expires_after(limits_.read_timeout);
      stream_.async_handshake(ssl::stream_base::server,
                              beast::bind_front_handler(&HttpSession::on_handshake, this->shared_from_this()));
    } else {
      do_read();
    }
  }

  void on_handshake(beast::error_code ec) {
    if (ec) {
      // Plain HTTP on the TLS port, an untrusted or missing client certificate, a scanner.
      beast::error_code ignored;
      const auto peer = lowest().socket().remote_endpoint(ignored);
      spdlog::debug("https {}:{}: TLS handshake failed: {}", peer.address().to_string(), peer.port(), ec.message());
      lowest().close();
      return;
    }
    do_read();
  }

  void do_read() {
    parser_.emplace();
    parser_->body_limit(limits_.body_limit);
    request_body_limit_ = limits_.body_limit;
    lowest().expires_after(limits_.read_timeout);
    reading_ = true;
    // The head first: the body's limit and its share of the daemon's budget depend on it.
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&HttpSession::on_header, this->shared_from_this()));
  }

  void on_header(beast::error_code ec, size_t bytes) {
    if (ec || event_stream_due()) return on_read(ec, bytes);
    if (std::optional<HttpResponse> refused = admit_body()) {
      // The body stays unread: answer, then close (the close drains what the client still sends).
      reading_ = false;
      read_done_ = true;
      beast::error_code ignored;
      const auto peer = lowest().socket().remote_endpoint(ignored);
      spdlog::warn("http {}:{}: refused request: {}", peer.address().to_string(), peer.port(), refused->body());
      on_answer(add_pending(parser_->get().version(), false), std::move(*refused));
      return;
    }
    reading_body_ = true;
    note_busy();
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&HttpSession::on_read, this->shared_from_this()));
  }

  // Sets the body limit of the request whose head was read (its route's, HttpHandler::body_limit)
  // and reserves its body from the daemon's budget; or the answer refusing it (413, 503).
  std::optional<HttpResponse> admit_body() {
    request_body_limit_ = handler_.body_limit(parser_->get(), limits_.body_limit);
    const auto length = parser_->content_length();
    if (length && *length > request_body_limit_) return bad_request_answer(http::error::body_limit);
    parser_->body_limit(request_body_limit_);
    const uint64_t bytes = parser_->chunked() ? request_body_limit_ : length.value_or(0);
    if (!limits_.body_budget || bytes <= kUnbudgetedBodyBytes) return std::nullopt;
    auto reserved = limits_.body_budget->try_reserve(bytes);
    if (!reserved) {
      return make_error_response(503, "RESOURCE_EXHAUSTED",
                                 "the server holds its limit of request bodies now (" +
                                     std::to_string(limits_.body_budget->capacity()) + " bytes); try again later");
    }
    body_reservation_ = std::move(*reserved);
    return std::nullopt;
  }

  void on_read(beast::error_code ec, size_t /*bytes*/) {
    reading_ = false;
    reading_body_ = false;
    BodyBudget::Reservation body = std::move(body_reservation_);  // given back with the answer, or now
    if (event_stream_due()) {
      // The stream's hand-over cancelled this read (or it ended meanwhile): no more requests here.
      hand_over();
      return;
    }
    if (ec) {
      answer_read_error(ec);
      return;
    }
    HttpRequest request = parser_->release();
    const bool keep_alive = request.keep_alive();
    const uint64_t seq = add_pending(request.version(), keep_alive);
    pending_.back().body = std::move(body);
    if (!keep_alive) read_done_ = true;
    handler_.handle(std::move(request), responder_for(seq));
    maybe_read_more();
    note_busy();
  }

  // Answers the request that read error `ec` ended, if it deserves an answer, and stops reading.
  void answer_read_error(beast::error_code ec) {
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
      if (pending_.empty() && !writing_) do_close();
      note_busy();
      return;
    }
    beast::error_code ignored;
    const auto peer = lowest().socket().remote_endpoint(ignored);
    spdlog::warn("http {}:{}: refused request: {}", peer.address().to_string(), peer.port(), ec.message());
    const unsigned version = parser_ && parser_->is_header_done() ? parser_->get().version() : 11;
    on_answer(add_pending(version, false), bad_request_answer(ec));
  }

  // The answer to a request Beast's parser refused with `ec`.
  HttpResponse bad_request_answer(beast::error_code ec) const {
    if (ec == http::error::body_limit) {
      return make_error_response(
          413, "INVALID_ARGUMENT",
          "the request body is larger than the limit of " + std::to_string(request_body_limit_) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return make_error_response(431, "INVALID_ARGUMENT", "the request header is too large");
    }
    return make_error_response(400, "INVALID_ARGUMENT", "malformed HTTP request: " + ec.message());
  }

  // Queues a new request slot and returns its sequence number.
  uint64_t add_pending(unsigned version, bool keep_alive) {
    pending_.push_back({version, keep_alive, std::nullopt, std::nullopt, {}});
    return front_seq_ + pending_.size() - 1;
  }

  // The slot of request `seq`, or null (cannot happen: answered twice).
  Pending* slot(uint64_t seq) {
    const uint64_t index = seq - front_seq_;
    if (seq < front_seq_ || index >= pending_.size()) return nullptr;
    return &pending_[index];
  }

  // On the strand: stores the answer to request `seq` and writes what is ready.
  void on_answer(uint64_t seq, HttpResponse response) {
    if (Pending* p = slot(seq)) {
      p->response.emplace(std::move(response));
      do_write();
      note_busy();
    }
  }

  void on_stream_answer(uint64_t seq, HttpEventStream stream) {
    if (Pending* p = slot(seq)) {
      p->stream = std::move(stream);
      do_write();
    }
  }

  HttpResponder responder_for(uint64_t seq) {
    auto self = this->shared_from_this();
    return HttpResponder(
        [self, seq](HttpResponse response) {
          net::post(self->strand_, [self, seq, response = std::move(response)]() mutable {
            self->on_answer(seq, std::move(response));
          });
        },
        [self, seq](HttpEventStream stream) {
          net::post(self->strand_, [self, seq, stream = std::move(stream)]() mutable {
            self->on_stream_answer(seq, std::move(stream));
          });
        });
  }

  void do_write() {
    if (writing_ || closing_ || pending_.empty()) return;
    Pending& front = pending_.front();
    if (front.stream) return hand_over();
    if (!front.response) return;
    // Draining: the answer to the last request this connection reads closes it.
    const bool last = no_more_requests_when_draining() && pending_.size() == 1;
    response_ = std::move(*front.response);
    response_.version(front.version);
    response_.keep_alive(front.keep_alive && !last);
    pending_.pop_front();
    ++front_seq_;
    writing_ = true;
    lowest().expires_after(limits_.write_timeout);
    http::async_write(
        stream_, response_,
        beast::bind_front_handler(&HttpSession::on_write, this->shared_from_this(), response_.need_eof()));
  }

  void on_write(bool close, beast::error_code ec, size_t /*bytes*/) {
    writing_ = false;
    if (ec) {
      // The connection is gone; answers still on their way find a closed socket and end there.
      spdlog::debug("http: write: {}", ec.message());
      closing_ = true;
      note_busy();
      return;
    }
    // No request is read after an answer that closed the connection; answers to requests read
    // before it still go out (a read that had started, when draining).
    if (close) read_done_ = true;
    if (pending_.empty() && read_done_) {
      close_when_read_ends();
    } else {
      maybe_read_more();
      do_write();
    }
    note_busy();
  }

  // Closes the connection once no read is under way. Closing starts a read of its own (the
  // drain), and a Beast stream takes one read at a time: a read that has received nothing is
  // cancelled and its handler closes (answer_read_error); one that has received part of a
  // request goes on, and that request is answered before the close.
  void close_when_read_ends() {
    if (!reading_) return do_close();
    cancel_read_if_idle();
  }

  // Cancels the read under way if it has received nothing; whether it did.
  bool cancel_read_if_idle() {
    if (buffer_.size() != 0 || !parser_ || parser_->got_some()) return false;
    beast::error_code ignored;
    lowest().socket().cancel(ignored);
    return true;
  }

  void maybe_read_more() {
    if (draining()) read_done_ = true;
    if (!reading_ && !read_done_ && !closing_ && pending_.size() < limits_.max_in_flight) do_read();
  }

  bool draining() const { return slot_ && slot_->draining(); }

  // While the server drains no request is read after those already read, and a read that has
  // received nothing yet is cancelled (a request racing it finds the connection closed, as after
  // any idle keep-alive close). True, when draining, once no more requests will come: false while
  // a read that has received part of a request goes on (that request's answer is the last).
  bool no_more_requests_when_draining() {
    if (!draining()) return false;
    read_done_ = true;
    return !reading_ || cancel_read_if_idle();
  }

  // Every answer before it is written and the next one is an event stream.
  bool event_stream_due() const { return !closing_ && !pending_.empty() && pending_.front().stream; }

  // Gives the connection to an EventStreamSession for the stream due next, once no read is under
  // way (one is cancelled; its handler comes back here). Requests read after the stream's are
  // dropped; answers still on their way find this session closing.
  void hand_over() {
    read_done_ = true;
    if (reading_) {
      beast::error_code ignored;
      lowest().socket().cancel(ignored);
      return;
    }
    Pending front = std::move(pending_.front());
    pending_.pop_front();
    ++front_seq_;
    closing_ = true;
    note_busy();  // an event stream is not waited for: the drain ends it
    start_event_stream_session(std::move(stream_), std::move(*front.stream), front.version, limits_, std::move(slot_));
  }

  // Tells the server's connection count whether this connection is busy: a request body coming
  // in, an answer owed or being written (connection_count.h).
  void note_busy() {
    const bool busy = !closing_ && (reading_body_ || writing_ || !pending_.empty());
    if (busy == busy_ || !slot_) return;
    busy_ = busy;
    slot_->busy_changed(busy);
  }

  void do_close() {
    if (closing_) return;
    closing_ = true;
    note_busy();
    close_gracefully(stream_, drain_buffer_, limits_.read_timeout, this->shared_from_this());
  }

  Stream stream_;  // moved out by hand_over()
  // The connection's strand, kept apart from the stream: answers may still arrive after a hand-over.
  typename Stream::executor_type strand_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  uint64_t request_body_limit_ = 0;           // the body limit of the request being read
  BodyBudget::Reservation body_reservation_;  // its body's bytes, from the head until it is read
  const HttpSessionLimits& limits_;
  HttpHandler& handler_;
  ConnectionSlot slot_;  // the connection's place among the server's open ones; moved out by hand_over()

  std::deque<Pending> pending_;
  uint64_t front_seq_ = 0;     // sequence number of pending_.front()
  HttpResponse response_;      // the response being written
  bool reading_ = false;       // a read is under way
  bool reading_body_ = false;  // the read under way has the request's head, and reads its body
  bool busy_ = false;          // as last told to slot_ (note_busy)
  bool writing_ = false;       // a write is under way
  bool read_done_ = false;     // no more requests: EOF, error, "Connection: close", or an event stream
  bool closing_ = false;       // closing, or handed over: this session no longer touches the connection
  DrainBuffer drain_buffer_{};
};

}  // namespace

void start_http_session(tcp::socket&& socket, const HttpSessionLimits& limits, HttpHandler& handler,
                        ConnectionSlot slot) {
  std::make_shared<HttpSession<PlainStream>>(limits, handler, std::move(slot), std::move(socket))->run();
}

void start_https_session(tcp::socket&& socket, ssl::context& tls, const HttpSessionLimits& limits, HttpHandler& handler,
                         ConnectionSlot slot) {
  std::make_shared<HttpSession<TlsStream>>(limits, handler, std::move(slot), std::move(socket), tls)->run();
}

}  // namespace tessera
