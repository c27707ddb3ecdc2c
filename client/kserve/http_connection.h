// One kept-alive HTTP/1.1 connection to a KServe server (Boost.Beast), used from one thread at a
// time: a request, its answer, with a deadline; reconnects when the server has closed it.
#pragma once

#include <grpcpp/grpcpp.h>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace tessera::client::kserve {

struct HttpAnswer {
  unsigned status = 0;
  std::string body;
  std::optional<size_t> header_length;  // Inference-Header-Content-Length, when present
};

class HttpConnection {
 public:
  // `token`: sent as `Authorization: Bearer TOKEN` when not empty.
  HttpConnection(std::string host, std::string port, std::string token);

  // One request. `header_length` set: the body is a binary-extension body and the header
  // Inference-Header-Content-Length says where its JSON ends. Transport failures come back as
  // UNAVAILABLE (cannot connect, connection lost) or DEADLINE_EXCEEDED (`timeout` passed).
  grpc::Status request(boost::beast::http::verb method, const std::string& target, const std::string& body,
                       std::optional<size_t> header_length, std::chrono::microseconds timeout, HttpAnswer& answer);

 private:
  boost::beast::error_code connect(std::chrono::steady_clock::time_point deadline);
  boost::beast::error_code exchange(boost::beast::http::verb method, const std::string& target, const std::string& body,
                                    std::optional<size_t> header_length, std::chrono::steady_clock::time_point deadline,
                                    HttpAnswer& answer);

  const std::string host_;
  const std::string port_;
  const std::string token_;
  boost::asio::io_context io_;
  boost::beast::tcp_stream stream_{io_};
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
};

}  // namespace tessera::client::kserve
