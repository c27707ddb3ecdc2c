#include "tests/integration/http_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>

#include <cctype>

namespace tessera::testing {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;

namespace {

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Runs the io_context until the started operation completes (tcp_stream enforces the timeout).
void run_until_done(net::io_context& ioc) {
  ioc.restart();
  ioc.run();
}

// Connects `stream` to 127.0.0.1:port; "" or what failed.
std::string connect_loopback(net::io_context& ioc, beast::tcp_stream& stream, int port, std::chrono::seconds timeout) {
  beast::error_code ec;
  stream.expires_after(timeout);
  stream.async_connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)),
                       [&](beast::error_code e) { ec = e; });
  run_until_done(ioc);
  return ec ? "connect: " + ec.message() : "";
}

// The TLS handshake as a client verifying the name 127.0.0.1; "" or what failed.
std::string tls_handshake(net::io_context& ioc, TlsStream& tls, std::chrono::seconds timeout) {
  beast::error_code ec;
  tls.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
  beast::get_lowest_layer(tls).expires_after(timeout);
  tls.async_handshake(ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
  run_until_done(ioc);
  return ec ? "TLS handshake: " + ec.message() : "";
}

// The answer as an HttpReply, header names lower-cased.
HttpReply to_reply(http::response<http::string_body> res) {
  HttpReply reply;
  reply.status = static_cast<int>(res.result_int());
  reply.body = std::move(res.body());
  reply.keep_alive = res.keep_alive();
  for (const auto& field : res) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[name] = std::string(field.value());
  }
  return reply;
}

}  // namespace

HttpClient::HttpClient(int port, std::chrono::seconds timeout) : port_(port), timeout_(timeout), stream_(ioc_) {}

HttpClient::HttpClient(int port, const HttpTlsOptions& tls, std::chrono::seconds timeout)
    : port_(port), timeout_(timeout), stream_(ioc_) {
  tls_context_.emplace(ssl::context::tls_client);
  beast::error_code ignored;  // a bad file shows as a failed handshake
  tls_context_->load_verify_file(tls.ca.string(), ignored);
  tls_context_->set_verify_mode(ssl::verify_peer, ignored);
  if (!tls.cert.empty()) {
    tls_context_->use_certificate_chain_file(tls.cert.string(), ignored);
    tls_context_->use_private_key_file(tls.key.string(), ssl::context::pem, ignored);
  }
}

HttpReply HttpClient::request(http::verb method, const std::string& target, const std::string& body,
                              const std::string& content_type) {
  HttpReply reply;
  auto close_socket = [&] {
    connected_ = false;
    beast::error_code ignored;
    if (tls_stream_) {
      beast::get_lowest_layer(*tls_stream_).socket().close(ignored);
    } else {
      stream_.socket().close(ignored);
    }
  };
  if (!connected_) {
    buffer_.clear();
    if (tls_context_) tls_stream_ = std::make_unique<TlsStream>(ioc_, *tls_context_);
    beast::tcp_stream& lowest = tls_stream_ ? beast::get_lowest_layer(*tls_stream_) : stream_;
    reply.error = connect_loopback(ioc_, lowest, port_, timeout_);
    if (!reply.error.empty()) return reply;
    if (tls_stream_) {
      reply.error = tls_handshake(ioc_, *tls_stream_, timeout_);
      if (!reply.error.empty()) {
        close_socket();
        return reply;
      }
    }
    connected_ = true;
  }

  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::user_agent, "tessera-integration-test");
  for (const auto& [name, value] : headers_) req.set(name, value);
  if (!content_type.empty()) req.set(http::field::content_type, content_type);
  req.body() = body;
  req.prepare_payload();

  beast::error_code ec, write_ec;
  // A server refusing a large body may answer and close before taking all of it: still read.
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  parser.skip(method == http::verb::head);  // a HEAD answer has headers only
  auto exchange = [&](auto& stream) {
    beast::get_lowest_layer(stream).expires_after(timeout_);
    http::async_write(stream, req, [&](beast::error_code e, size_t) { write_ec = e; });
    run_until_done(ioc_);
    beast::get_lowest_layer(stream).expires_after(timeout_);
    http::async_read(stream, buffer_, parser, [&](beast::error_code e, size_t) { ec = e; });
    run_until_done(ioc_);
  };
  if (tls_stream_) {
    exchange(*tls_stream_);
  } else {
    exchange(stream_);
  }
  if (ec) {
    close_socket();
    reply.error = "read: " + ec.message() + (write_ec ? " (write: " + write_ec.message() + ")" : "");
    return reply;
  }
  reply = to_reply(parser.release());
  if (!reply.keep_alive) close_socket();
  return reply;
}

}  // namespace tessera::testing
