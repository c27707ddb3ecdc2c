// One HTTP connection (Beast 1.74, the advanced_server shape): reads requests on its strand,
// hands each to the HttpHandler, and writes the answers in request order as they arrive.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "server/http_types.h"

namespace tessera {

struct HttpSessionLimits {
  uint64_t body_limit = 16 << 20;  // larger bodies get 413
  std::chrono::seconds read_timeout{30};   // per request, and idle keep-alive
  std::chrono::seconds write_timeout{30};  // per response
  size_t max_in_flight = 8;  // requests read but not yet answered (the bounded write queue)
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `limits` and `handler` must outlive the session.
  HttpSession(boost::asio::ip::tcp::socket&& socket, const HttpSessionLimits& limits,
              HttpHandler& handler);

  void run();

 private:
  // A request read and not yet answered on the wire; the front of the deque is written next.
  struct Pending {
    unsigned version = 11;
    bool keep_alive = false;
    std::optional<HttpResponse> response;
  };

  void do_read();
  void on_read(boost::beast::error_code ec, size_t bytes);
  // Answers the request that read error `ec` ended, if it deserves an answer, and stops reading.
  void answer_read_error(boost::beast::error_code ec);
  // Queues a new request slot and returns its sequence number.
  uint64_t add_pending(unsigned version, bool keep_alive);
  // On the strand: stores the answer to request `seq` and writes what is ready.
  void on_answer(uint64_t seq, HttpResponse response);
  HttpResponder responder_for(uint64_t seq);
  void do_write();
  void on_write(bool close, boost::beast::error_code ec, size_t bytes);
  void maybe_read_more();
  // Half-closes and reads (discarding) what the peer still sends, so it sees our last answer
  // instead of a reset; bounded by the read timeout.
  void do_close();
  void on_drain(boost::beast::error_code ec, size_t bytes);

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  const HttpSessionLimits& limits_;
  HttpHandler& handler_;

  std::deque<Pending> pending_;
  uint64_t front_seq_ = 0;  // sequence number of pending_.front()
  HttpResponse writing_;    // the response being written
  bool reading_ = false;
  bool writing_in_progress_ = false;
  bool read_done_ = false;  // no more requests: EOF, error, or "Connection: close"
  bool closing_ = false;
  std::array<char, 4096> drain_buffer_{};
};

}  // namespace tessera
