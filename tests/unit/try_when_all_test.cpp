// SPDX-License-Identifier: Apache-2.0
// try_when_all: values in order, the first failure stops the siblings and is returned
// after all finished, exceptions, and a stop from outside.
#include "ringio/try_when_all.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>
#include <tuple>
#include <variant>
#include <vector>

#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/stop.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/yield.hpp"

using namespace ringio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// How each child ended, in order of finishing.
using journal = std::vector<std::string>;

template <class T>
task<result<T>> value_after(std::chrono::milliseconds d, T v, journal& log, std::string name) {
  auto slept = co_await sleep_for(d);
  if (!slept) {
    log.push_back(name + ":stopped");
    co_return unexpected(slept.error());
  }
  log.push_back(name + ":ok");
  co_return v;
}

task<result<void>> done_after(std::chrono::milliseconds d, journal& log, std::string name) {
  auto slept = co_await sleep_for(d);
  log.push_back(name + (slept ? ":ok" : ":stopped"));
  co_return slept;
}

// Fails with `e` after `d`, even when stopped earlier (then it fails at once).
task<result<int>> fail_after(std::chrono::milliseconds d, std::errc e, journal& log, std::string name) {
  auto slept = co_await sleep_for(d);
  log.push_back(name + (slept ? ":failed" : ":stopped-failed"));
  co_return unexpected(e);
}

task<result<int>> throw_after_yield(journal& log) {
  co_await yield();
  log.push_back("thrower:threw");
  throw std::runtime_error("child threw");
}

// Waits for a stop and records whether its own token said so.
task<result<void>> wait_for_stop(journal& log, std::string name) {
  auto slept = co_await sleep_for(1h);
  std::stop_token t = co_await current_stop_token();
  log.push_back(name + (t.stop_requested() ? ":saw-stop" : ":no-stop"));
  co_return slept;
}

}  // namespace

TEST(TryWhenAll, ValuesComeBackInArgumentOrder) {
  io_context ctx;
  journal log;
  auto r = sync_wait(ctx, [](journal& log) -> task<result<std::tuple<int, std::string, std::monostate>>> {
    co_return co_await try_when_all(value_after(20ms, 1, log, "a"), value_after(1ms, std::string("two"), log, "b"),
                                    done_after(5ms, log, "c"));
  }(log));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(std::get<0>(*r), 1);
  EXPECT_EQ(std::get<1>(*r), "two");
  EXPECT_EQ(log, (journal{"b:ok", "c:ok", "a:ok"}));
}

TEST(TryWhenAll, TheFirstErrorStopsTheSiblingsAndComesBackAfterAllFinished) {
  io_context ctx;
  journal log;
  auto t0 = clock_type::now();
  auto r = sync_wait(ctx, [](journal& log) -> task<result<std::tuple<int, int, std::monostate>>> {
    auto out =
        co_await try_when_all(value_after(1h, 1, log, "slow"),
                              fail_after(10ms, std::errc::connection_reset, log, "bad"), wait_for_stop(log, "waiter"));
    log.push_back("returned");
    co_return out;
  }(log));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::connection_reset);
  EXPECT_LT(clock_type::now() - t0, 5s);
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0], "bad:failed");
  EXPECT_EQ(log.back(), "returned");
  EXPECT_NE(std::find(log.begin(), log.end(), "slow:stopped"), log.end());
  EXPECT_NE(std::find(log.begin(), log.end(), "waiter:saw-stop"), log.end());
}

TEST(TryWhenAll, TheFirstToFailInTimeWinsNotTheFirstArgument) {
  io_context ctx;
  journal log;
  auto r = sync_wait(ctx, [](journal& log) -> task<result<std::tuple<int, int>>> {
    // "late" fails too, but only after it was stopped by "early"'s failure.
    co_return co_await try_when_all(fail_after(1h, std::errc::broken_pipe, log, "late"),
                                    fail_after(5ms, std::errc::timed_out, log, "early"));
  }(log));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::timed_out);
  EXPECT_EQ(log, (journal{"early:failed", "late:stopped-failed"}));
}

TEST(TryWhenAll, AChildFailingSynchronouslyStopsTheOnesStartedAfterIt) {
  io_context ctx;
  journal log;
  auto r = sync_wait(ctx, [](journal& log) -> task<result<std::tuple<int, std::monostate>>> {
    auto instant = []() -> task<result<int>> { co_return unexpected(std::errc::invalid_argument); };
    co_return co_await try_when_all(instant(), wait_for_stop(log, "next"));
  }(log));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::invalid_argument);
  EXPECT_EQ(log, (journal{"next:saw-stop"}));
}

TEST(TryWhenAll, AnExceptionStopsTheSiblingsAndIsRethrownAfterAllFinished) {
  io_context ctx;
  journal log;
  EXPECT_THROW(sync_wait(ctx,
                         [](journal& log) -> task<void> {
                           auto r = co_await try_when_all(wait_for_stop(log, "sibling"), throw_after_yield(log));
                           (void)r;
                           log.push_back("not reached");
                         }(log)),
               std::runtime_error);
  EXPECT_EQ(log, (journal{"thrower:threw", "sibling:saw-stop"}));
}

TEST(TryWhenAll, AnExceptionWinsOverAnEarlierError) {
  io_context ctx;
  journal log;
  EXPECT_THROW(sync_wait(ctx,
                         [](journal& log) -> task<void> {
                           auto r = co_await try_when_all(throw_after_yield(log),
                                                          fail_after(0ms, std::errc::io_error, log, "bad"));
                           (void)r;
                         }(log)),
               std::runtime_error);
  EXPECT_EQ(log.size(), 2u);
}

TEST(TryWhenAll, AStopFromOutsideReachesEveryChild) {
  io_context ctx;
  journal log;
  result<std::tuple<std::monostate, int>> out = unexpected(std::errc::io_error);
  sync_wait(ctx, [](journal& log, result<std::tuple<std::monostate, int>>& out) -> task<void> {
    scope s;
    s.spawn([](journal& log, result<std::tuple<std::monostate, int>>& out) -> task<void> {
      out = co_await try_when_all(wait_for_stop(log, "a"), value_after(1h, 7, log, "b"));
    }(log, out));
    auto slept = co_await sleep_for(10ms);
    EXPECT_TRUE(slept);
    s.request_stop();
    co_await s.join();
  }(log, out));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error(), std::errc::operation_canceled);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(std::find(log.begin(), log.end(), "a:saw-stop"), log.end());
  EXPECT_NE(std::find(log.begin(), log.end(), "b:stopped"), log.end());
}

TEST(TryWhenAll, OperationsAndTheEmptyCase) {
  io_context ctx;
  auto r = sync_wait(ctx, []() -> task<result<std::tuple<std::monostate, std::monostate>>> {
    co_return co_await try_when_all(sleep_for(1ms), nop());
  }());
  EXPECT_TRUE(r) << r.error().message();
  auto none = sync_wait(ctx, []() -> task<result<std::tuple<>>> { co_return co_await try_when_all(); }());
  EXPECT_TRUE(none);
}

TEST(TryWhenAll, AVectorOfTasks) {
  io_context ctx;
  journal log;
  auto good = sync_wait(ctx, [](journal& log) -> task<result<std::vector<int>>> {
    std::vector<task<result<int>>> ts;
    for (int i = 0; i < 20; ++i) ts.push_back(value_after(std::chrono::milliseconds(20 - i), i, log, "v"));
    co_return co_await try_when_all(std::move(ts));
  }(log));
  ASSERT_TRUE(good) << good.error().message();
  ASSERT_EQ(good->size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ((*good)[static_cast<std::size_t>(i)], i);

  log.clear();
  auto bad = sync_wait(ctx, [](journal& log) -> task<result<std::vector<int>>> {
    std::vector<task<result<int>>> ts;
    for (int i = 0; i < 5; ++i) ts.push_back(value_after(1h, i, log, "s"));
    ts.push_back(fail_after(5ms, std::errc::host_unreachable, log, "f"));
    co_return co_await try_when_all(std::move(ts));
  }(log));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), std::errc::host_unreachable);
  EXPECT_EQ(log.size(), 6u);
  EXPECT_EQ(std::count(log.begin(), log.end(), "s:stopped"), 5);

  auto empty = sync_wait(ctx, []() -> task<result<std::vector<int>>> {
    co_return co_await try_when_all(std::vector<task<result<int>>>{});
  }());
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}
