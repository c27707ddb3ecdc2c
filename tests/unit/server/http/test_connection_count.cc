// The HTTP server's connection count (server/http/connection_count.h): the bound, and the drain's
// wait, which gives idle connections a grace and busy ones until the deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server/http/connection_count.h"

namespace tessera {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST(HttpConnections, RefusesPastTheBoundAndGivesThePlaceBack) {
  HttpConnections connections(2);
  ConnectionSlot a = connections.try_open();
  ConnectionSlot b = connections.try_open();
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(connections.try_open());
  EXPECT_EQ(connections.refused(), 1u);
  ConnectionSlot a_copy = a;  // a session handing the connection over keeps the same place
  a.reset();
  EXPECT_EQ(connections.open(), 2u);
  a_copy.reset();
  EXPECT_EQ(connections.open(), 1u);
  EXPECT_TRUE(connections.try_open());
}

TEST(HttpConnections, TheDrainWaitsForIdleConnectionsOnlyForTheGrace) {
  HttpConnections connections(4);
  ConnectionSlot idle = connections.try_open();
  const auto start = Clock::now();
  EXPECT_FALSE(connections.wait_until_closed(milliseconds(50), start + milliseconds(60000)));
  EXPECT_GE(Clock::now() - start, milliseconds(50));
  EXPECT_LT(Clock::now() - start, milliseconds(30000)) << "an idle connection held the drain to the deadline";
}

TEST(HttpConnections, TheDrainWaitsForABusyConnectionUntilItIsIdle) {
  HttpConnections connections(4);
  ConnectionSlot busy = connections.try_open();
  ConnectionSlot idle = connections.try_open();
  busy->busy_changed(true);
  EXPECT_EQ(connections.busy(), 1u);
  std::thread answer([&] {
    std::this_thread::sleep_for(milliseconds(300));  // past the first deadline
    busy->busy_changed(false);
  });
  const auto start = Clock::now();
  // Still open (the idle one, and the busy one that is idle now): false, and only once idle.
  EXPECT_FALSE(connections.wait_until_closed(milliseconds(20), start + milliseconds(60000)));
  EXPECT_GE(Clock::now() - start, milliseconds(300));
  EXPECT_LT(Clock::now() - start, milliseconds(30000));
  EXPECT_EQ(connections.busy(), 0u);
  answer.join();
}

TEST(HttpConnections, TheDrainEndsAsSoonAsTheLastConnectionCloses) {
  HttpConnections connections(4);
  ConnectionSlot busy = connections.try_open();
  busy->busy_changed(true);
  std::thread close([&] {
    std::this_thread::sleep_for(milliseconds(100));
    busy->busy_changed(false);
    busy.reset();
  });
  // The connection closes just after it became idle: within the grace that then starts, and the
  // wait ends then, not at the grace's end.
  const auto start = Clock::now();
  EXPECT_TRUE(connections.wait_until_closed(milliseconds(20000), start + milliseconds(60000)));
  EXPECT_LT(Clock::now() - start, milliseconds(15000));
  close.join();
  EXPECT_EQ(connections.open(), 0u);
}

TEST(HttpConnections, ABusyConnectionIsNotWaitedForPastTheSecondDeadline) {
  HttpConnections connections(4);
  ConnectionSlot stuck = connections.try_open();
  stuck->busy_changed(true);
  const auto start = Clock::now();
  EXPECT_FALSE(connections.wait_until_closed(milliseconds(10), start + milliseconds(200)));
  EXPECT_GE(Clock::now() - start, milliseconds(200));
  stuck->busy_changed(false);
}

}  // namespace
}  // namespace tessera
