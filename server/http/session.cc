#include "server/http/session.h"

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "server/http/responses.h"

namespace tessera {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection over `Stream`: PlainStream or TlsStream (which first does a TLS handshake and
// ends with a TLS shutdown). Everything runs on the connection's strand.
template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  // `stream_args` construct the stream: the socket, plus the SSL context for TLS.
  template <class... StreamArgs>
  HttpSession(const HttpSessionLimits& limits, HttpHandler& handler, StreamArgs&&... stream_args)
      : stream_(std::forward<StreamArgs>(stream_args)...),
        limits_(limits),
        handler_(handler),
        tick_timer_(stream_.get_executor()) {}

  void run() {
    // Start on the session's strand: the socket was accepted with one.
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&HttpSession::on_run, this->shared_from_this()));
  }

 private:
  // A request read and not yet answered on the wire; the front of the deque is written next.
  struct Pending {
    unsigned version = 11;
    bool keep_alive = false;
    std::optional<HttpResponse> response;
    std::optional<HttpEventStream> stream;
  };

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void on_run() {
    if constexpr (kTls) {
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
    lowest().expires_after(limits_.read_timeout);
    reading_ = true;
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&HttpSession::on_read, this->shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t /*bytes*/) {
    reading_ = false;
    if (streaming_) {
      // An event stream started meanwhile (and cancelled this read): no more requests here.
      start_watch();
      return;
    }
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
      if (pending_.empty() && !writing_in_progress_) do_close();
      return;
    }
    beast::error_code ignored;
    const auto peer = lowest().socket().remote_endpoint(ignored);
    spdlog::warn("http {}:{}: refused request: {}", peer.address().to_string(), peer.port(), ec.message());
    const unsigned version = parser_ && parser_->is_header_done() ? parser_->get().version() : 11;
    HttpResponse response;
    if (ec == http::error::body_limit) {
      response = make_error_response(
          413, "INVALID_ARGUMENT",
          "the request body is larger than the limit of " + std::to_string(limits_.body_limit) + " bytes");
    } else if (ec == http::error::header_limit) {
      response = make_error_response(431, "INVALID_ARGUMENT", "the request header is too large");
    } else {
      response = make_error_response(400, "INVALID_ARGUMENT", "malformed HTTP request: " + ec.message());
    }
    on_answer(add_pending(version, false), std::move(response));
  }

  // Queues a new request slot and returns its sequence number.
  uint64_t add_pending(unsigned version, bool keep_alive) {
    pending_.push_back({version, keep_alive, std::nullopt, std::nullopt});
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
      p->response = std::move(response);
      do_write();
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
          net::post(self->stream_.get_executor(), [self, seq, response = std::move(response)]() mutable {
            self->on_answer(seq, std::move(response));
          });
        },
        [self, seq](HttpEventStream stream) {
          net::post(self->stream_.get_executor(), [self, seq, stream = std::move(stream)]() mutable {
            self->on_stream_answer(seq, std::move(stream));
          });
        });
  }

  void do_write() {
    if (writing_in_progress_ || closing_ || streaming_ || pending_.empty()) return;
    Pending& front = pending_.front();
    if (front.stream) return start_stream();
    if (!front.response) return;
    writing_ = std::move(*front.response);
    writing_.version(front.version);
    writing_.keep_alive(front.keep_alive);
    pending_.pop_front();
    ++front_seq_;
    writing_in_progress_ = true;
    lowest().expires_after(limits_.write_timeout);
    http::async_write(stream_, writing_,
                      beast::bind_front_handler(&HttpSession::on_write, this->shared_from_this(), writing_.need_eof()));
  }

  void on_write(bool close, beast::error_code ec, size_t /*bytes*/) {
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

  void maybe_read_more() {
    if (!reading_ && !read_done_ && !closing_ && pending_.size() < limits_.max_in_flight) do_read();
  }

  // --- Event streams: the head, then an event per tick of `tick_timer_`, each write bounded by
  // the write timeout; a read stays open meanwhile, so a client that goes away ends the stream
  // at once rather than at the next event.

  void start_stream() {
    Pending& front = pending_.front();
    HttpEventStream stream = std::move(*front.stream);
    const unsigned version = front.version;
    pending_.pop_front();
    ++front_seq_;
    streaming_ = true;
    read_done_ = true;
    source_ = std::move(stream.source);
    chunked_ = version >= 11;  // HTTP/1.0: the body runs until the connection closes
    stream_head_ = http::response<http::empty_body>(std::move(stream.head.base()));
    stream_head_.version(version);
    stream_head_.keep_alive(false);
    stream_head_.erase(http::field::content_length);
    stream_head_.chunked(chunked_);
    head_serializer_.emplace(stream_head_);
    source_->set_wake([weak = this->weak_from_this()] {
      if (auto self = weak.lock()) net::post(self->stream_.get_executor(), [self] { self->on_wake(); });
    });
    // A read for a next request may be under way: cancelled, its handler starts the watch.
    if (reading_) {
      beast::error_code ignored;
      lowest().socket().cancel(ignored);
    } else {
      start_watch();
    }
    writing_in_progress_ = true;
    lowest().expires_after(limits_.write_timeout);
    http::async_write_header(stream_, *head_serializer_,
                             beast::bind_front_handler(&HttpSession::on_stream_write, this->shared_from_this()));
  }

  // Reads (and drops) whatever the client sends while the stream runs; an error means it left.
  void start_watch() {
    if (watching_ || closing_) return;
    if (stream_over_) return do_close();
    watching_ = true;
    lowest().expires_never();  // the read's timer only: a write under way keeps its own
    stream_.async_read_some(net::buffer(drain_buffer_),
                            beast::bind_front_handler(&HttpSession::on_watch, this->shared_from_this()));
  }

  void on_watch(beast::error_code ec, size_t /*bytes*/) {
    watching_ = false;
    if (closing_) return;
    if (stream_over_) return do_close();
    if (ec) {
      spdlog::debug("http: event stream ended: the client went away ({})", ec.message());
      return abort_stream();
    }
    start_watch();
  }

  void on_stream_write(beast::error_code ec, size_t /*bytes*/) {
    writing_in_progress_ = false;
    if (closing_) return;
    if (ec) {
      spdlog::debug("http: event stream ended: write: {}", ec.message());
      return abort_stream();
    }
    if (!head_sent_) {
      head_sent_ = true;
      return tick();
    }
    if (source_over_) return finish_source();  // that was the end of the body
    if (woken_) return tick();
    tick_timer_.expires_after(source_->interval());
    tick_timer_.async_wait(beast::bind_front_handler(&HttpSession::on_tick, this->shared_from_this()));
  }

  void on_tick(beast::error_code /*ec: cancelled by a wake or by the end*/) {
    if (closing_ || !source_ || source_over_ || writing_in_progress_) return;
    tick();
  }

  void on_wake() {
    if (closing_ || !source_ || source_over_) return;
    woken_ = true;
    if (head_sent_ && !writing_in_progress_) tick_timer_.cancel();  // on_tick runs now
  }

  // Writes the next event, or the end of the body when the source is over.
  void tick() {
    woken_ = false;
    std::optional<std::string> event = source_->next();
    if (!event) {
      spdlog::debug("http: event stream ended by the server");
      source_over_ = true;
      if (!chunked_) return finish_source();
    } else {
      event_ = std::move(*event);
    }
    writing_in_progress_ = true;
    lowest().expires_after(limits_.write_timeout);
    auto on_written = beast::bind_front_handler(&HttpSession::on_stream_write, this->shared_from_this());
    if (!event) {
      net::async_write(stream_, http::make_chunk_last(), std::move(on_written));
    } else if (chunked_) {
      net::async_write(stream_, http::make_chunk(net::buffer(event_)), std::move(on_written));
    } else {
      net::async_write(stream_, net::buffer(event_), std::move(on_written));
    }
  }

  // The body's end is on the wire: the source goes (a drain waiting for it may go on), then the
  // connection closes.
  void finish_source() {
    source_.reset();
    end_stream();
  }

  // The whole body is out: stop watching, then close as after any last answer.
  void end_stream() {
    stream_over_ = true;
    if (watching_) {
      beast::error_code ignored;
      lowest().socket().cancel(ignored);  // on_watch then closes
      return;
    }
    do_close();
  }

  // The client left or a write failed: drop the connection.
  void abort_stream() {
    closing_ = true;
    source_.reset();
    tick_timer_.cancel();
    lowest().close();
  }

  // Half-closes and reads (discarding) what the peer still sends, so it sees our last answer
  // instead of a reset; bounded by the read timeout. Over TLS: a TLS shutdown, then the close.
  void do_close() {
    if (closing_) return;
    closing_ = true;
    lowest().expires_after(std::min<std::chrono::seconds>(limits_.read_timeout, std::chrono::seconds(5)));
    if constexpr (kTls) {
      stream_.async_shutdown(beast::bind_front_handler(&HttpSession::on_shutdown, this->shared_from_this()));
    } else {
      beast::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      if (ec) return;
      lowest().async_read_some(net::buffer(drain_buffer_),
                               beast::bind_front_handler(&HttpSession::on_drain, this->shared_from_this()));
    }
  }

  void on_shutdown(beast::error_code /*ec*/) { lowest().close(); }

  void on_drain(beast::error_code ec, size_t /*bytes*/) {
    if (ec) {
      beast::error_code ignored;
      lowest().socket().close(ignored);
      return;
    }
    lowest().async_read_some(net::buffer(drain_buffer_),
                             beast::bind_front_handler(&HttpSession::on_drain, this->shared_from_this()));
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpSessionLimits& limits_;
  HttpHandler& handler_;

  std::deque<Pending> pending_;
  uint64_t front_seq_ = 0;  // sequence number of pending_.front()
  HttpResponse writing_;    // the response being written
  bool reading_ = false;
  bool writing_in_progress_ = false;
  bool read_done_ = false;  // no more requests: EOF, error, "Connection: close", or a stream
  bool closing_ = false;
  std::array<char, 4096> drain_buffer_{};

  // The event stream, once one is the answer.
  std::unique_ptr<HttpEventSource> source_;  // null once the stream has ended
  bool source_over_ = false;                 // next() said so; the body's end is being written
  http::response<http::empty_body> stream_head_;
  std::optional<http::response_serializer<http::empty_body>> head_serializer_;
  std::string event_;  // the event being written
  net::steady_timer tick_timer_;
  bool streaming_ = false;
  bool chunked_ = true;
  bool head_sent_ = false;
  bool woken_ = false;        // the source asked for next() before the interval is up
  bool watching_ = false;     // the client-gone read is under way
  bool stream_over_ = false;  // the body's end is written
};

}  // namespace

void start_http_session(tcp::socket&& socket, const HttpSessionLimits& limits, HttpHandler& handler) {
  std::make_shared<HttpSession<PlainStream>>(limits, handler, std::move(socket))->run();
}

void start_https_session(tcp::socket&& socket, ssl::context& tls, const HttpSessionLimits& limits,
                         HttpHandler& handler) {
  std::make_shared<HttpSession<TlsStream>>(limits, handler, std::move(socket), tls)->run();
}

}  // namespace tessera
