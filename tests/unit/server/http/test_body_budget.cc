// The daemon-wide budget of request-body bytes (server/http/body_budget.h): reservations past the
// capacity are refused, and given back when they go.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "server/http/body_budget.h"

namespace tessera {
namespace {

TEST(BodyBudget, RefusesPastTheCapacityAndGivesBackOnRelease) {
  BodyBudget budget(100);
  std::optional<BodyBudget::Reservation> a = budget.try_reserve(60);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(budget.in_use(), 60u);
  EXPECT_FALSE(budget.try_reserve(41).has_value());
  EXPECT_FALSE(budget.try_reserve(UINT64_MAX).has_value());
  {
    std::optional<BodyBudget::Reservation> b = budget.try_reserve(40);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(budget.in_use(), 100u);
  }
  EXPECT_EQ(budget.in_use(), 60u);
  BodyBudget::Reservation moved = std::move(*a);
  a.reset();
  EXPECT_EQ(budget.in_use(), 60u);  // the moved-from one gave nothing back
  moved = BodyBudget::Reservation();
  EXPECT_EQ(budget.in_use(), 0u);
}

}  // namespace
}  // namespace tessera
