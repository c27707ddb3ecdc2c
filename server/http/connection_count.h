// The HTTP server's open connections, bounded by --max-connections, and its drain: a connection
// holds a slot from accept to close (its sessions keep it), and while the server drains every
// answer says "Connection: close" and no connection reads another request. A connection is busy
// while a request body is on its way in or an answer is owed or being written: the drain waits
// for busy connections longer than for idle ones.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace tessera {

class HttpConnections;

// One open connection's place in HttpConnections; the last copy gone frees it. Null: none.
using ConnectionSlot = std::shared_ptr<HttpConnections>;

class HttpConnections {
 public:
  explicit HttpConnections(size_t max_open) : max_open_(max_open) {}
  HttpConnections(const HttpConnections&) = delete;
  HttpConnections& operator=(const HttpConnections&) = delete;

  // A slot for a connection just accepted; null (and counted as refused) when max_open() are open.
  ConnectionSlot try_open();
  size_t max_open() const { return max_open_; }
  size_t open() const;
  uint64_t refused() const;

  // From now on answers close their connections (see above).
  void start_draining();
  bool draining() const;
  // A connection became busy (true) or idle again (false); see above.
  void busy_changed(bool busy);
  size_t busy() const;
  // Waits until no connection is open (true), or gives up (false): once no connection has been
  // busy for `grace` (from the call, or from when the last busy one became idle), or at
  // `deadline` however busy they are.
  bool wait_until_closed(std::chrono::milliseconds grace, std::chrono::steady_clock::time_point deadline);

 private:
  void release();

  const size_t max_open_;
  mutable std::mutex mu_;
  std::condition_variable closed_;
  size_t open_ = 0;
  size_t busy_ = 0;
  std::chrono::steady_clock::time_point became_idle_at_{};  // when busy_ last fell to 0
  uint64_t refused_ = 0;
  bool draining_ = false;
};

}  // namespace tessera
