// A plain TCP connection to the daemon for what HttpClient will not do: send raw bytes (a target
// as written, an oversized header), send slowly, or never read. Every wait is bounded.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace tessera::testing {

class RawConnection {
 public:
  explicit RawConnection(int port);  // 127.0.0.1:port
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends all of `bytes`; false when the peer closed or the send failed.
  bool send(std::string_view bytes);
  // Reads until the peer closes the connection or `timeout` passes. *closed says which.
  std::string read_until_closed(std::chrono::milliseconds timeout, bool* closed = nullptr);

 private:
  int fd_ = -1;
};

// The status code of the first HTTP response in `raw` (0 when there is none).
int http_status_of(const std::string& raw);

// A loopback port nothing listens on: bound by us, read, closed (0 when the bind failed).
int dead_port();

}  // namespace tessera::testing
