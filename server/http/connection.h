// What the two kinds of HTTP session (session.h, event_stream_session.h) share: the connection's
// stream types and the polite way to end a connection.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <type_traits>

namespace tessera {

// A connection: plain TCP, or TLS over TCP (which starts with a handshake and ends with a TLS
// shutdown). Its executor is the connection's strand.
using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
template <class Stream>
inline constexpr bool kIsTls = std::is_same_v<Stream, TlsStream>;

// Where a closing connection reads (and drops) what the peer still sends.
using DrainBuffer = std::array<char, 4096>;

// Reads into `buffer` until the peer closes or the stream's timer expires, then closes the socket.
// `owner` keeps `stream` and `buffer` alive meanwhile.
void drain_until_closed(PlainStream& stream, DrainBuffer& buffer, std::shared_ptr<void> owner);

// Half-closes and reads (discarding) what the peer still sends, so it sees our last answer
// instead of a reset; bounded by `read_timeout` (at most 5 s). Over TLS: a TLS shutdown, then
// the close. `owner` keeps `stream` and `buffer` alive meanwhile.
template <class Stream>
void close_gracefully(Stream& stream, DrainBuffer& buffer, std::chrono::seconds read_timeout,
                      std::shared_ptr<void> owner) {
  PlainStream& lowest = boost::beast::get_lowest_layer(stream);
  lowest.expires_after(std::min<std::chrono::seconds>(read_timeout, std::chrono::seconds(5)));
  if constexpr (kIsTls<Stream>) {
    stream.async_shutdown([&lowest, owner = std::move(owner)](boost::beast::error_code /*ec*/) { lowest.close(); });
  } else {
    boost::beast::error_code ec;
    lowest.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
    if (ec) return;
    drain_until_closed(lowest, buffer, std::move(owner));
  }
}

}  // namespace tessera
