#include "server/http/event_stream_session.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace tessera {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

// One event stream over `Stream` (PlainStream or TlsStream); everything runs on the connection's
// strand.
template <class Stream>
class EventStreamSession : public std::enable_shared_from_this<EventStreamSession<Stream>> {
 public:
  EventStreamSession(Stream&& stream, HttpEventStream events, unsigned version, const HttpSessionLimits& limits,
                     ConnectionSlot slot)
      : stream_(std::move(stream)),
        limits_(limits),
        slot_(std::move(slot)),
        source_(std::move(events.source)),
        chunked_(version >= 11),  // HTTP/1.0: the body runs until the connection closes
        head_(std::move(events.head.base())),
        timer_(stream_.get_executor()) {
    head_.version(version);
    head_.keep_alive(false);
    head_.erase(http::field::content_length);
    head_.chunked(chunked_);
  }

  void start() {
    source_->set_wake([weak = this->weak_from_this()] {
      if (auto self = weak.lock()) net::post(self->stream_.get_executor(), [self] { self->on_wake(); });
    });
    watch();
    head_serializer_.emplace(head_);
    writing_ = true;
    lowest().expires_after(limits_.write_timeout);
    http::async_write_header(stream_, *head_serializer_,
                             beast::bind_front_handler(&EventStreamSession::on_written, this->shared_from_this()));
  }

 private:
  enum class Phase {
    kHead,       // the head is being written
    kEvents,     // events go out, one per tick
    kLastChunk,  // the source is over; the body's end is being written
    kOver,       // the whole body is out; the connection closes once the watch stopped
    kClosed,     // closing or closed: nothing more happens here
  };

  PlainStream& lowest() { return beast::get_lowest_layer(stream_); }

  // Reads (and drops) whatever the client sends while the stream runs; an error means it left.
  void watch() {
    if (watching_ || phase_ == Phase::kClosed) return;
    if (phase_ == Phase::kOver) return close();
    watching_ = true;
    lowest().expires_never();  // the read's timer only: a write under way keeps its own
    stream_.async_read_some(net::buffer(drain_buffer_),
                            beast::bind_front_handler(&EventStreamSession::on_watch, this->shared_from_this()));
  }

  void on_watch(beast::error_code ec, size_t /*bytes*/) {
    watching_ = false;
    if (phase_ == Phase::kClosed) return;
    if (phase_ == Phase::kOver) return close();
    if (ec) {
      spdlog::debug("http: event stream ended: the client went away ({})", ec.message());
      return abort();
    }
    watch();
  }

  void on_written(beast::error_code ec, size_t /*bytes*/) {
    writing_ = false;
    if (phase_ == Phase::kClosed) return;
    if (ec) {
      spdlog::debug("http: event stream ended: write: {}", ec.message());
      return abort();
    }
    if (phase_ == Phase::kHead) {
      phase_ = Phase::kEvents;
      return tick();
    }
    if (phase_ == Phase::kLastChunk) return end_body();
    if (woken_) return tick();
    timer_.expires_after(source_->interval());
    timer_.async_wait(beast::bind_front_handler(&EventStreamSession::on_timer, this->shared_from_this()));
  }

  void on_timer(beast::error_code /*ec: cancelled by a wake or by the end*/) {
    if (phase_ != Phase::kEvents || writing_) return;
    tick();
  }

  void on_wake() {
    if (phase_ != Phase::kHead && phase_ != Phase::kEvents) return;
    woken_ = true;
    if (phase_ == Phase::kEvents && !writing_) timer_.cancel();  // on_timer runs now
  }

  // Writes the next event, or the end of the body when the source is over.
  void tick() {
    woken_ = false;
    std::optional<std::string> event = source_->next();
    if (!event) {
      spdlog::debug("http: event stream ended by the server");
      phase_ = Phase::kLastChunk;
      if (!chunked_) return end_body();
      return write(http::make_chunk_last());
    }
    event_ = std::move(*event);
    if (chunked_) return write(http::make_chunk(net::buffer(event_)));
    write(net::buffer(event_));
  }

  template <class Buffers>
  void write(const Buffers& buffers) {
    writing_ = true;
    lowest().expires_after(limits_.write_timeout);
    net::async_write(stream_, buffers,
                     beast::bind_front_handler(&EventStreamSession::on_written, this->shared_from_this()));
  }

  // The body's end is on the wire: the source goes (a drain waiting for it may go on), the watch
  // stops, then the connection closes as after any last answer.
  void end_body() {
    source_.reset();
    phase_ = Phase::kOver;
    if (watching_) {
      beast::error_code ignored;
      lowest().socket().cancel(ignored);  // on_watch then closes
      return;
    }
    close();
  }

  // The client left or a write failed: drop the connection.
  void abort() {
    phase_ = Phase::kClosed;
    source_.reset();
    timer_.cancel();
    lowest().close();
  }

  void close() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kClosed;
    close_gracefully(stream_, drain_buffer_, limits_.read_timeout, this->shared_from_this());
  }

  Stream stream_;
  const HttpSessionLimits& limits_;
  ConnectionSlot slot_;                      // the connection's place among the server's open ones
  std::unique_ptr<HttpEventSource> source_;  // null once the body has ended
  const bool chunked_;
  http::response<http::empty_body> head_;
  std::optional<http::response_serializer<http::empty_body>> head_serializer_;
  std::string event_;  // the event being written
  net::steady_timer timer_;
  DrainBuffer drain_buffer_{};
  Phase phase_ = Phase::kHead;
  bool writing_ = false;   // a write is under way
  bool watching_ = false;  // the client-gone read is under way
  bool woken_ = false;     // the source asked for next() before the interval is up
};

template <class Stream>
void start_session(Stream&& stream, HttpEventStream events, unsigned version, const HttpSessionLimits& limits,
                   ConnectionSlot slot) {
  std::make_shared<EventStreamSession<Stream>>(std::forward<Stream>(stream), std::move(events), version, limits,
                                               std::move(slot))
      ->start();
}

}  // namespace

void start_event_stream_session(PlainStream&& stream, HttpEventStream events, unsigned version,
                                const HttpSessionLimits& limits, ConnectionSlot slot) {
  start_session(std::move(stream), std::move(events), version, limits, std::move(slot));
}

void start_event_stream_session(TlsStream&& stream, HttpEventStream events, unsigned version,
                                const HttpSessionLimits& limits, ConnectionSlot slot) {
  start_session(std::move(stream), std::move(events), version, limits, std::move(slot));
}

}  // namespace tessera
