// SPDX-License-Identifier: Apache-2.0
// deadline: fires at its time, moves later and earlier, disarms, cancels, obeys a stop,
// ends with the loop; on every backend.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/ringio_clock.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
using clock_type = ringio_test::ringio_clock;  // virtual time under sim

namespace {

class Deadlines : public backend_test {};

// What one wait() gave, and when.
struct wait_outcome {
  bool done = false;
  result<void> r;
  clock_type::time_point at{};
};

task<void> wait_on(deadline& d, wait_outcome& out) {
  auto r = co_await d.wait();
  out.r = r;
  out.at = clock_type::now();
  out.done = true;
}

task<void> pause(std::chrono::nanoseconds d) {
  auto slept = co_await sleep_for(d);
  EXPECT_TRUE(slept);
}

TEST_P(Deadlines, FiresAtItsTime) {
  auto t0 = clock_type::now();
  deadline d(t0 + 30ms);
  wait_outcome out;
  run(wait_on(d, out));
  ASSERT_TRUE(out.done);
  EXPECT_TRUE(out.r) << out.r.error().message();
  EXPECT_GE(out.at, t0 + 30ms);
  EXPECT_LT(out.at - t0, 5s);
  EXPECT_TRUE(d.expired());
  EXPECT_TRUE(d.armed());
}

TEST_P(Deadlines, APassedTimeCompletesAtOnceAndADisarmedOneSaysSo) {
  deadline d(clock_type::now() - 1s);
  wait_outcome out;
  auto t0 = clock_type::now();
  run(wait_on(d, out));
  EXPECT_TRUE(out.r);
  EXPECT_LT(out.at - t0, 1s);
  deadline idle;
  EXPECT_FALSE(idle.armed());
  EXPECT_FALSE(idle.expired());
  EXPECT_EQ(idle.expiry(), clock_type::time_point::max());
  idle.extend(-5s);  // a negative duration counts as zero: armed and already passed
  EXPECT_TRUE(idle.armed());
  EXPECT_TRUE(idle.expired());
}

TEST_P(Deadlines, MovingItLaterDelaysTheWake) {
  auto t0 = clock_type::now();
  deadline d(t0 + 20ms);
  wait_outcome out;
  clock_type::time_point moved_to{};
  run([](deadline& d, wait_outcome& out, clock_type::time_point& moved_to) -> task<void> {
    scope s;
    s.spawn(wait_on(d, out));
    co_await pause(10ms);
    EXPECT_FALSE(out.done);
    moved_to = clock_type::now() + 60ms;
    d.reset(moved_to);
    co_await s.join();
  }(d, out, moved_to));
  ASSERT_TRUE(out.done);
  EXPECT_TRUE(out.r) << out.r.error().message();
  EXPECT_GE(out.at, moved_to);
  EXPECT_LT(out.at - t0, 5s);
}

TEST_P(Deadlines, MovingItEarlierWakesTheWaiterSooner) {
  auto t0 = clock_type::now();
  deadline d(t0 + 1h);
  wait_outcome out;
  clock_type::time_point moved_to{};
  run([](deadline& d, wait_outcome& out, clock_type::time_point& moved_to) -> task<void> {
    scope s;
    s.spawn(wait_on(d, out));
    co_await pause(10ms);
    moved_to = clock_type::now() + 20ms;
    d.reset(moved_to);
    co_await s.join();
  }(d, out, moved_to));
  ASSERT_TRUE(out.done);
  EXPECT_TRUE(out.r) << out.r.error().message();
  EXPECT_GE(out.at, moved_to);
  EXPECT_LT(out.at - t0, 5s);
}

TEST_P(Deadlines, ExtendingOnActivityIsAnIdleTimeout) {
  auto t0 = clock_type::now();
  deadline d;
  d.extend(40ms);
  wait_outcome out;
  clock_type::time_point last{};
  run([](deadline& d, wait_outcome& out, clock_type::time_point& last) -> task<void> {
    scope s;
    s.spawn(wait_on(d, out));
    for (int i = 0; i < 10; ++i) {  // activity every 10 ms for 100 ms: never idle for 40
      co_await pause(10ms);
      EXPECT_FALSE(out.done) << "fired while active, round " << i;
      d.extend(40ms);
      last = d.expiry();
    }
    co_await s.join();  // now idle: fires 40 ms after the last activity
  }(d, out, last));
  ASSERT_TRUE(out.done);
  EXPECT_TRUE(out.r) << out.r.error().message();
  EXPECT_GE(out.at, last);
  EXPECT_GE(out.at - t0, 140ms);
  EXPECT_LT(out.at - t0, 5s);
}

TEST_P(Deadlines, AMillionResetsAreCheapAndTheLastOneCounts) {
  deadline d;
  d.extend(20ms);
  wait_outcome out;
  clock_type::duration spent{};
  clock_type::time_point final_expiry{};
  run([](deadline& d, wait_outcome& out, clock_type::duration& spent,
         clock_type::time_point& final_expiry) -> task<void> {
    scope s;
    s.spawn(wait_on(d, out));
    auto t0 = clock_type::now();
    for (int i = 0; i < 1'000'000; ++i) d.extend(50ms);  // later each time: plain stores
    spent = clock_type::now() - t0;
    final_expiry = d.expiry();
    co_await s.join();
  }(d, out, spent, final_expiry));
  ASSERT_TRUE(out.done);
  EXPECT_TRUE(out.r);
  EXPECT_GE(out.at, final_expiry);
  // A clock read and a compare each (about 20-40 ns); a syscall or a wake-up per reset
  // would take seconds.
  EXPECT_LT(spent, 1500ms);
}

TEST_P(Deadlines, DisarmedItWaitsUntilArmedAgain) {
  auto t0 = clock_type::now();
  deadline d(t0 + 20ms);
  wait_outcome out;
  clock_type::time_point armed_at{};
  run([](deadline& d, wait_outcome& out, clock_type::time_point& armed_at) -> task<void> {
    scope s;
    s.spawn(wait_on(d, out));
    d.disarm();
    EXPECT_FALSE(d.armed());
    co_await pause(60ms);  // past the first time: nothing happens
    EXPECT_FALSE(out.done);
    armed_at = clock_type::now() + 10ms;
    d.reset(armed_at);
    co_await s.join();
  }(d, out, armed_at));
  ASSERT_TRUE(out.done);
  EXPECT_TRUE(out.r);
  EXPECT_GE(out.at, armed_at);
  EXPECT_GE(out.at - t0, 70ms);
}

TEST_P(Deadlines, CancelEndsTheWaitAndTheDeadlineIsReusable) {
  deadline d(clock_type::now() + 1h);
  wait_outcome first, second;
  run([](deadline& d, wait_outcome& first, wait_outcome& second) -> task<void> {
    scope s;
    s.spawn(wait_on(d, first));
    co_await pause(5ms);
    EXPECT_TRUE(d.has_waiter());
    d.cancel();
    co_await s.join();
    EXPECT_FALSE(d.has_waiter());
    EXPECT_FALSE(d.armed());
    d.cancel();  // no waiter: only disarms; the next wait waits normally
    d.extend(10ms);
    co_await wait_on(d, second);
  }(d, first, second));
  ASSERT_TRUE(first.done);
  EXPECT_FALSE(first.r);
  EXPECT_EQ(first.r.error(), std::errc::operation_canceled);
  ASSERT_TRUE(second.done);
  EXPECT_TRUE(second.r) << second.r.error().message();
}

TEST_P(Deadlines, AStopCancelsTheWait) {
  deadline d(clock_type::now() + 1h);
  wait_outcome out;
  auto t0 = clock_type::now();
  run([](deadline& d, wait_outcome& out) -> task<void> {
    scope s;
    s.spawn(wait_on(d, out));
    co_await pause(10ms);
    s.request_stop();
    co_await s.join();
  }(d, out));
  ASSERT_TRUE(out.done);
  EXPECT_FALSE(out.r);
  EXPECT_EQ(out.r.error(), std::errc::operation_canceled);
  EXPECT_LT(out.at - t0, 5s);
  EXPECT_TRUE(d.armed());  // a stop ends the wait; it does not touch the deadline
}

TEST_P(Deadlines, AStopBeforeTheWaitCancelsAtOnce) {
  deadline d(clock_type::now() + 1h);
  wait_outcome out;
  run([](deadline& d, wait_outcome& out) -> task<void> {
    scope s;
    s.request_stop();
    s.spawn(wait_on(d, out));
    co_await s.join();
  }(d, out));
  ASSERT_TRUE(out.done);
  EXPECT_EQ(out.r.error(), std::errc::operation_canceled);
}

TEST_P(Deadlines, TheLoopsShutdownEndsTheWait) {
  deadline d;  // outlives the context
  wait_outcome out;
  {
    io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
    ctx.spawn(wait_on(d, out));
    sync_wait(ctx, pause(5ms));
    EXPECT_TRUE(d.has_waiter());
  }
  ASSERT_TRUE(out.done);
  EXPECT_EQ(out.r.error(), std::errc::operation_canceled);
  EXPECT_FALSE(d.has_waiter());
}

// Random resets, extends, disarms, cancels and stops at random moments. Invariants: a
// wait that succeeds ends no earlier than the deadline's time then (and the deadline
// is armed); one that fails saw a cancel() or a stop; every wait ends.
TEST_P(Deadlines, RandomMovesKeepTheInvariants) {
  const std::uint64_t seed = std::random_device{}();
  std::printf("deadline random moves: seed %llu\n", static_cast<unsigned long long>(seed));
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 30; ++round) {
    deadline d;
    wait_outcome out;
    bool cancelled = false;
    run([](deadline& d, wait_outcome& out, bool& cancelled, std::mt19937_64& rng) -> task<void> {
      scope s;
      s.spawn(wait_on(d, out));
      int steps = static_cast<int>(rng() % 12);
      for (int i = 0; i < steps && !out.done; ++i) {
        co_await pause(std::chrono::microseconds(rng() % 4000));
        if (out.done) break;
        switch (rng() % 8) {
          case 0:
            d.disarm();
            break;
          case 1:
            cancelled = true;
            d.cancel();
            break;
          case 2:
            s.request_stop();
            cancelled = true;
            break;
          case 3:
            d.reset(clock_type::now() + std::chrono::microseconds(rng() % 3000));
            break;
          default:
            d.extend(std::chrono::microseconds(rng() % 6000));
            break;
        }
      }
      if (!out.done && !d.armed()) d.extend(1ms);  // let every round end
      co_await s.join();
    }(d, out, cancelled, rng));
    ASSERT_TRUE(out.done) << "round " << round;
    if (out.r) {
      EXPECT_TRUE(d.armed()) << "round " << round;
      EXPECT_GE(out.at, d.expiry()) << "round " << round;
    } else {
      EXPECT_TRUE(cancelled) << "round " << round << ": " << out.r.error().message();
      EXPECT_EQ(out.r.error(), std::errc::operation_canceled) << "round " << round;
    }
    EXPECT_FALSE(d.has_waiter());
  }
}

}  // namespace

RINGIO_ALL_BACKENDS_AND_SIM(Deadlines);
