#include "server/http/body_budget.h"

#include <utility>

namespace tessera {

BodyBudget::Reservation& BodyBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

void BodyBudget::Reservation::release() {
  if (budget_ != nullptr) budget_->in_use_.fetch_sub(bytes_, std::memory_order_relaxed);
  budget_ = nullptr;
}

std::optional<BodyBudget::Reservation> BodyBudget::try_reserve(uint64_t bytes) {
  uint64_t used = in_use_.load(std::memory_order_relaxed);
  do {
    if (bytes > capacity_ || used > capacity_ - bytes) return std::nullopt;
  } while (!in_use_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return Reservation(this, bytes);
}

}  // namespace tessera
