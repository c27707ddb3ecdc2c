#include "server/http/connection.h"

#include <utility>

namespace tessera {

void drain_until_closed(PlainStream& stream, DrainBuffer& buffer, std::shared_ptr<void> owner) {
  stream.async_read_some(boost::asio::buffer(buffer), [&stream, &buffer, owner = std::move(owner)](
                                                          boost::beast::error_code ec, size_t /*bytes*/) mutable {
    if (ec) {
      boost::beast::error_code ignored;
      stream.socket().close(ignored);
      return;
    }
    drain_until_closed(stream, buffer, std::move(owner));
  });
}

}  // namespace tessera
