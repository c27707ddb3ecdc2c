// A tiny HTTP/1.1 client for the tests (Beast), one keep-alive connection, every step bounded;
// plain or HTTPS (verifying the server against a CA, optionally with a client certificate).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace tessera::testing {

struct HttpReply {
  int status = 0;  // 0: no answer (error() says why)
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string error;
  bool keep_alive = false;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

// HTTPS: the CA the server's certificate must chain to (checked for the name 127.0.0.1), and
// the client certificate and key to present (both empty: none).
struct HttpTlsOptions {
  std::filesystem::path ca;
  std::filesystem::path cert;
  std::filesystem::path key;
};

class HttpClient {
 public:
  explicit HttpClient(int port, std::chrono::seconds timeout = std::chrono::seconds(20));
  HttpClient(int port, const HttpTlsOptions& tls, std::chrono::seconds timeout = std::chrono::seconds(20));

  // A header sent with every later request ("authorization", "Bearer x").
  void set_header(const std::string& name, const std::string& value) { headers_[name] = value; }

  // Sends one request (connecting first when needed) and reads the answer. The connection is
  // reused until the server closes it.
  HttpReply request(boost::beast::http::verb method, const std::string& target, const std::string& body = "",
                    const std::string& content_type = "");
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
  std::optional<boost::asio::ssl::context> tls_context_;                            // set: HTTPS
  std::unique_ptr<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_stream_;  // per connection
  boost::beast::flat_buffer buffer_;
  std::map<std::string, std::string> headers_;
  bool connected_ = false;
};

}  // namespace tessera::testing
