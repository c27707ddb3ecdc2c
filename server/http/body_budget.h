// The daemon-wide budget of request-body bytes: a session reserves a request's body (its
// Content-Length, or its route's limit when chunked) before reading it, and the reservation is
// given back when the request is answered. So concurrent large bodies hold at most the budget,
// whatever the number of connections; a request past it is refused 503 without being read.
// Bodies of at most kUnbudgetedBodyBytes skip it, so clients that trickle large bodies in (each
// holding its share up to the read timeout) cannot starve small requests.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace tessera {

inline constexpr uint64_t kUnbudgetedBodyBytes = 64 << 10;

class BodyBudget {
 public:
  explicit BodyBudget(uint64_t capacity) : capacity_(capacity) {}

  // Bytes held until destroyed (or moved from).
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) {
      other.budget_ = nullptr;
    }
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation() { release(); }

   private:
    friend class BodyBudget;
    Reservation(BodyBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
    void release();

    BodyBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  // `bytes` more, or nullopt when that would pass the capacity.
  std::optional<Reservation> try_reserve(uint64_t bytes);

  uint64_t capacity() const { return capacity_; }
  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }

 private:
  const uint64_t capacity_;
  std::atomic<uint64_t> in_use_{0};
};

}  // namespace tessera
