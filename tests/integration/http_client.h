// A tiny HTTP/1.1 client for the tests (Beast), one keep-alive connection, every step bounded.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <map>
#include <string>

namespace tessera::testing {

struct HttpReply {
  int status = 0;                 // 0: no answer (error() says why)
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string error;
  bool keep_alive = false;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

class HttpClient {
 public:
  explicit HttpClient(int port, std::chrono::seconds timeout = std::chrono::seconds(20));

  // Sends one request (connecting first when needed) and reads the answer. The connection is
  // reused until the server closes it.
  HttpReply request(boost::beast::http::verb method, const std::string& target,
                    const std::string& body = "", const std::string& content_type = "");
  HttpReply get(const std::string& target) { return request(boost::beast::http::verb::get, target); }
  HttpReply post(const std::string& target, const std::string& body,
                 const std::string& content_type = "application/octet-stream") {
    return request(boost::beast::http::verb::post, target, body, content_type);
  }

 private:
  int port_;
  std::chrono::seconds timeout_;
  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
};

}  // namespace tessera::testing
