// The planner tests' board profiles (by name, as load_board_profile finds them).
#pragma once

#include <gtest/gtest.h>

#include "accel/plan/board_profile.h"

namespace tessera::plan::testing {

// The profile `name`; a load failure fails the test and gives a default profile.
inline BoardProfile board(const char* name) {
  auto b = load_board_profile(name);
  EXPECT_TRUE(b.is_ok()) << b.status().to_string();
  return b.is_ok() ? b.value() : BoardProfile{};
}

}  // namespace tessera::plan::testing
