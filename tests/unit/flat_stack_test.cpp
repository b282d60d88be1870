// SPDX-License-Identifier: Apache-2.0
// Awaits that complete at once must not grow the stack, whatever the optimisation level:
// at GCC -O0 symmetric transfer is an ordinary call, and before the resumption loop
// each of these loops nested two frames per await and overflowed the stack. The
// make target test-debug runs them in a GCC -O0 build.
#include <gtest/gtest.h>

#include <chrono>

#include "ringio/channel.hpp"
#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/sync.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/when_all.hpp"
#include "ringio/yield.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

constexpr int rounds = 100'000;

task<int> ready(int v) { co_return v; }

// A chain of tasks, each awaiting the next, the last completing at once.
task<int> chain(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await chain(depth - 1);
}

}  // namespace

TEST(FlatStack, SequentialAwaitsOfReadyTasks) {
  io_context ctx;
  EXPECT_EQ(sync_wait(ctx,
                      []() -> task<long> {
                        long sum = 0;
                        for (int i = 0; i < rounds; ++i) sum += co_await ready(1);
                        co_return sum;
                      }()),
            rounds);
}

TEST(FlatStack, ChainOfTasksAwaitingTasks) {
  io_context ctx;
  EXPECT_EQ(sync_wait(ctx, chain(rounds)), rounds);
}

TEST(FlatStack, ChainStartedInlineBySpawn) {
  io_context ctx;
  int depth = 0;
  sync_wait(ctx, [](int& out) -> task<void> {
    scope s;
    s.spawn([](int& o) -> task<void> { o = co_await chain(rounds); }(out));
    co_await s.join();
  }(depth));
  EXPECT_EQ(depth, rounds);
}

TEST(FlatStack, ReadyChannelSendsAndReceives) {
  io_context ctx;
  channel<int> ch(4);
  EXPECT_EQ(sync_wait(ctx,
                      [](channel<int>& c) -> task<long> {
                        long sum = 0;
                        for (int i = 0; i < rounds; ++i) {
                          (void)co_await c.send(1);
                          auto v = co_await c.receive();
                          sum += v ? *v : 0;
                        }
                        co_return sum;
                      }(ch)),
            rounds);
}

TEST(FlatStack, ReadySyncPrimitives) {
  io_context ctx;
  event ev;
  ev.set();
  semaphore sem(1);
  mutex mu;
  EXPECT_EQ(sync_wait(ctx,
                      [](event& e, semaphore& s, mutex& m) -> task<int> {
                        int ok = 0;
                        for (int i = 0; i < rounds; ++i) {
                          if (co_await e.wait()) ++ok;
                          if (co_await s.acquire()) s.release();
                          if (auto guard = co_await m.lock(); !guard) ok = -1;
                        }
                        co_return ok;
                      }(ev, sem, mu)),
            rounds);
}

TEST(FlatStack, CombinatorsOfReadyTasks) {
  io_context ctx;
  EXPECT_EQ(sync_wait(ctx,
                      []() -> task<long> {
                        long sum = 0;
                        for (int i = 0; i < rounds; ++i) {
                          auto [a, b] = co_await when_all(ready(1), ready(1));
                          auto t = co_await with_timeout(ready(1), 10s);
                          sum += a + b + (t ? *t : 0);
                        }
                        co_return sum;
                      }()),
            3L * rounds);
}

TEST(FlatStack, Yields) {
  io_context ctx;
  sync_wait(ctx, []() -> task<void> {
    for (int i = 0; i < rounds; ++i) co_await yield();
  }());
}
