#include "tests/integration/http_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

#include <cctype>

namespace tessera::testing {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

HttpClient::HttpClient(int port, std::chrono::seconds timeout) : port_(port), timeout_(timeout), stream_(ioc_) {}

HttpReply HttpClient::request(http::verb method, const std::string& target, const std::string& body,
                              const std::string& content_type) {
  HttpReply reply;
  beast::error_code ec;
  // Runs the io_context until the started operation completes (tcp_stream enforces the timeout).
  auto run = [&] {
    ioc_.restart();
    ioc_.run();
  };
  if (!connected_) {
    buffer_.clear();
    stream_.expires_after(timeout_);
    stream_.async_connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)),
                          [&](beast::error_code e) { ec = e; });
    run();
    if (ec) {
      reply.error = "connect: " + ec.message();
      return reply;
    }
    connected_ = true;
  }

  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::user_agent, "tessera-integration-test");
  if (!content_type.empty()) req.set(http::field::content_type, content_type);
  req.body() = body;
  req.prepare_payload();

  beast::error_code write_ec;
  stream_.expires_after(timeout_);
  http::async_write(stream_, req, [&](beast::error_code e, size_t) { write_ec = e; });
  run();
  // A server refusing a large body may answer and close before taking all of it: still read.
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  parser.skip(method == http::verb::head);  // a HEAD answer has headers only
  stream_.expires_after(timeout_);
  http::async_read(stream_, buffer_, parser, [&](beast::error_code e, size_t) { ec = e; });
  run();
  if (ec) {
    connected_ = false;
    beast::error_code ignored;
    stream_.socket().close(ignored);
    reply.error = "read: " + ec.message() + (write_ec ? " (write: " + write_ec.message() + ")" : "");
    return reply;
  }
  auto res = parser.release();
  reply.status = static_cast<int>(res.result_int());
  reply.body = std::move(res.body());
  reply.keep_alive = res.keep_alive();
  for (const auto& field : res) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[name] = std::string(field.value());
  }
  if (!reply.keep_alive) {
    connected_ = false;
    beast::error_code ignored;
    stream_.socket().close(ignored);
  }
  return reply;
}

}  // namespace tessera::testing
