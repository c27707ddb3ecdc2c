#include "client/kserve/http_connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

#include <utility>

namespace tessera::client::kserve {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Answers larger than this are refused (a classification answer is a few hundred bytes; a
// probabilities tensor a few KiB).
constexpr uint64_t kMaxAnswerBytes = 64ull << 20;

// Runs the asynchronous operation `start` begins on `io` to its end; its error code.
template <class Start>
beast::error_code run(boost::asio::io_context& io, Start&& start) {
  beast::error_code result = boost::asio::error::would_block;
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  io.restart();
  io.run();
  return result;
}

// Whether `ec` says the server closed a kept-alive connection before reading the request (then
// the request is sent again on a new connection).
bool stale_connection(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == boost::asio::error::connection_reset ||
         ec == boost::asio::error::broken_pipe || ec == boost::asio::error::eof;
}

}  // namespace

HttpConnection::HttpConnection(std::string host, std::string port, std::string token)
    : host_(std::move(host)), port_(std::move(port)), token_(std::move(token)) {}

beast::error_code HttpConnection::connect(Clock::time_point deadline) {
  tcp::resolver resolver(io_);
  beast::error_code ec;
  const auto endpoints = resolver.resolve(host_, port_, ec);
  if (ec) return ec;
  stream_.expires_at(deadline);
  ec = run(io_, [&](auto handler) { stream_.async_connect(endpoints, std::move(handler)); });
  connected_ = !ec;
  return ec;
}

beast::error_code HttpConnection::exchange(http::verb method, const std::string& target, const std::string& body,
                                           std::optional<size_t> header_length, Clock::time_point deadline,
                                           HttpAnswer& answer) {
  http::request<http::string_body> request{method, target, 11};
  request.set(http::field::host, host_);
  request.set(http::field::user_agent, "tessera");
  if (!token_.empty()) request.set(http::field::authorization, "Bearer " + token_);
  if (header_length) {
    request.set("Inference-Header-Content-Length", std::to_string(*header_length));
    request.set(http::field::content_type, "application/octet-stream");
  } else if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
  }
  request.body() = body;
  request.prepare_payload();
  stream_.expires_at(deadline);
  beast::error_code ec = run(io_, [&](auto handler) { http::async_write(stream_, request, std::move(handler)); });
  if (ec) return ec;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  ec = run(io_, [&](auto handler) { http::async_read(stream_, buffer_, parser, std::move(handler)); });
  if (ec) return ec;
  http::response<http::string_body> response = parser.release();
  answer.status = response.result_int();
  answer.body = std::move(response.body());
  answer.header_length.reset();
  const auto length = response.find("Inference-Header-Content-Length");
  if (length != response.end()) {
    try {
      answer.header_length = std::stoull(std::string(length->value()));
    } catch (const std::exception&) {
      answer.header_length = answer.body.size() + 1;  // unreadable: past the body, refused by the reader
    }
  }
  if (!response.keep_alive()) {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    connected_ = false;
  }
  return {};
}

grpc::Status HttpConnection::request(http::verb method, const std::string& target, const std::string& body,
                                     std::optional<size_t> header_length, std::chrono::microseconds timeout,
                                     HttpAnswer& answer) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = connected_;
    beast::error_code ec;
    if (!connected_) ec = connect(deadline);
    if (ec) {
      if (ec == beast::error::timeout)
        return {grpc::StatusCode::DEADLINE_EXCEEDED, "connecting to " + host_ + ":" + port_ + " timed out"};
      return {grpc::StatusCode::UNAVAILABLE, "cannot connect to " + host_ + ":" + port_ + ": " + ec.message()};
    }
    ec = exchange(method, target, body, header_length, deadline, answer);
    if (!ec) return grpc::Status::OK;
    buffer_.clear();
    beast::error_code ignored;
    stream_.socket().close(ignored);
    connected_ = false;
    if (ec == beast::error::timeout) return {grpc::StatusCode::DEADLINE_EXCEEDED, "no answer within the timeout"};
    if (!(reused && stale_connection(ec)))
      return {grpc::StatusCode::UNAVAILABLE, "HTTP " + target + ": " + ec.message()};
  }
  return {grpc::StatusCode::UNAVAILABLE, "HTTP " + target + ": the server closed the connection twice"};
}

}  // namespace tessera::client::kserve
