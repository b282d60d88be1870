// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/stop.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/when_all.hpp"
#include "ringio/when_any.hpp"
#include "ringio/yield.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

task<int> after(std::chrono::milliseconds d, int v) {
  auto r = co_await sleep_for(d);
  if (!r) co_return -1;  // cancelled
  co_return v;
}

task<int> fail_after_yield() {
  co_await yield();
  throw std::logic_error("child failed");
}

// Sleeps until cancelled; records how it ended.
task<void> sleeper(std::vector<std::string>& log, std::string name) {
  auto r = co_await sleep_for(10s);
  log.push_back(name + (r ? ":woke" : ":cancelled"));
}

}  // namespace

TEST(WhenAll, ReturnsEveryValueInOrder) {
  io_context ctx;
  auto [a, b, c] = sync_wait(ctx, []() -> task<std::tuple<int, int, std::monostate>> {
    co_return co_await when_all(after(20ms, 1), after(1ms, 2), []() -> task<void> { co_return; }());
  }());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  (void)c;
}

TEST(WhenAll, RunsChildrenConcurrently) {
  io_context ctx;
  auto t0 = std::chrono::steady_clock::now();
  auto v = sync_wait(ctx, []() -> task<std::vector<int>> {
    std::vector<task<int>> ts;
    for (int i = 0; i < 50; ++i) ts.push_back(after(50ms, i));
    co_return co_await when_all(std::move(ts));
  }());
  auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(v.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(v[i], i);
  EXPECT_LT(elapsed, 2s) << "50 sleeps of 50 ms ran one after another";
}

TEST(WhenAll, RethrowsTheFirstExceptionAfterAllFinished) {
  io_context ctx;
  int finished = 0;
  auto counted = [](int& f) -> task<int> {
    auto r = co_await sleep_for(20ms);
    ++f;
    co_return r ? 1 : 0;
  };
  EXPECT_THROW(sync_wait(ctx, [&]() -> task<void> { co_await when_all(fail_after_yield(), counted(finished)); }()),
               std::logic_error);
  EXPECT_EQ(finished, 1) << "when_all returned before its other child finished";
}

TEST(WhenAll, AcceptsOperationsDirectly) {
  io_context ctx;
  auto [a, b] = sync_wait(ctx, []() -> task<std::tuple<result<void>, result<void>>> {
    co_return co_await when_all(sleep_for(1ms), sleep_for(2ms));
  }());
  EXPECT_TRUE(a);
  EXPECT_TRUE(b);
}

TEST(WhenAny, FirstToFinishWinsAndLosersAreCancelledBeforeItReturns) {
  io_context ctx;
  std::vector<std::string> log;
  auto winner = sync_wait(ctx, [](std::vector<std::string>& log) -> task<std::size_t> {
    auto v = co_await when_any(sleeper(log, "a"), after(5ms, 7), sleeper(log, "b"));
    // Both losers must have finished (cancelled) by now.
    EXPECT_EQ(log.size(), 2u);
    EXPECT_EQ(std::get<1>(v), 7);
    co_return v.index();
  }(log));
  EXPECT_EQ(winner, 1u);
  std::sort(log.begin(), log.end());  // the losers finish in no particular order
  EXPECT_EQ(log, (std::vector<std::string>{"a:cancelled", "b:cancelled"}));
}

TEST(WhenAny, WinnerExceptionIsRethrown) {
  io_context ctx;
  std::vector<std::string> log;
  EXPECT_THROW(
      sync_wait(ctx, [&]() -> task<void> { (void)co_await when_any(fail_after_yield(), sleeper(log, "x")); }()),
      std::logic_error);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "x:cancelled");
}

TEST(WhenAny, ASynchronouslyFinishingChildStillWaitsForTheOthers) {
  io_context ctx;
  std::vector<std::string> log;
  auto idx = sync_wait(ctx, [](std::vector<std::string>& log) -> task<std::size_t> {
    auto v = co_await when_any([]() -> task<int> { co_return 3; }(), sleeper(log, "late"));
    co_return v.index();
  }(log));
  EXPECT_EQ(idx, 0u);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "late:cancelled");
}

TEST(WhenAny, VectorFormReportsTheWinnerIndex) {
  io_context ctx;
  auto [i, v] = sync_wait(ctx, []() -> task<std::pair<std::size_t, int>> {
    std::vector<task<int>> ts;
    ts.push_back(after(200ms, 0));
    ts.push_back(after(1ms, 1));
    ts.push_back(after(300ms, 2));
    co_return co_await when_any(std::move(ts));
  }());
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(v, 1);
}

TEST(WhenAny, AStopOfTheParentReachesEveryChild) {
  io_context ctx;
  std::vector<std::string> log;
  sync_wait(ctx, [](std::vector<std::string>& log) -> task<void> {
    scope s;
    s.spawn([](std::vector<std::string>& log) -> task<void> {
      (void)co_await when_any(sleeper(log, "p"), sleeper(log, "q"));
      log.push_back("when_any returned");
    }(log));
    co_await yield();
    s.request_stop();
    co_await s.join();
  }(log));
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[2], "when_any returned");
}

TEST(StopToken, TasksSeeTheTokenTheirAwaiterGaveThem) {
  io_context ctx;
  auto possible = sync_wait(ctx, []() -> task<std::pair<bool, bool>> {
    auto outside = co_await current_stop_token();
    scope s;
    bool inside = false;
    s.spawn([](bool& in) -> task<void> {
      auto t = co_await current_stop_token();
      in = t.stop_possible();
    }(inside));
    co_await s.join();
    co_return std::pair{outside.stop_possible(), inside};
  }());
  EXPECT_FALSE(possible.first);
  EXPECT_TRUE(possible.second);
}
