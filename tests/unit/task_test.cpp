// SPDX-License-Identifier: Apache-2.0
#include "ringio/task.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "ringio/io_context.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/yield.hpp"

using namespace ringio;

namespace {

task<int> value(int v) { co_return v; }
task<void> nothing() { co_return; }
task<int> add(int a, int b) {
  int x = co_await value(a);
  int y = co_await value(b);
  co_return x + y;
}
task<int> throws() {
  throw std::runtime_error("boom");
  co_return 0;
}
task<std::unique_ptr<std::string>> move_only() { co_return std::make_unique<std::string>("moved"); }

bool started = false;
task<void> mark_started() {
  started = true;
  co_return;
}

}  // namespace

TEST(Task, ReturnsItsValueThroughSyncWait) {
  io_context ctx;
  EXPECT_EQ(sync_wait(ctx, add(2, 3)), 5);
}

TEST(Task, IsLazyUntilAwaited) {
  io_context ctx;
  started = false;
  task<void> t = mark_started();
  EXPECT_FALSE(started);
  sync_wait(ctx, std::move(t));
  EXPECT_TRUE(started);
}

TEST(Task, UnawaitedTaskIsDestroyedWithoutRunning) {
  started = false;
  { task<void> t = mark_started(); }
  EXPECT_FALSE(started);
}

TEST(Task, PropagatesExceptionsToTheAwaiter) {
  io_context ctx;
  auto outer = []() -> task<std::string> {
    try {
      co_await throws();
    } catch (const std::runtime_error& e) {
      co_return std::string("caught ") + e.what();
    }
    co_return "not thrown";
  };
  EXPECT_EQ(sync_wait(ctx, outer()), "caught boom");
  EXPECT_THROW(sync_wait(ctx, throws()), std::runtime_error);
}

TEST(Task, MoveOnlyValues) {
  io_context ctx;
  auto p = sync_wait(ctx, move_only());
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, "moved");
}

// Symmetric transfer: a long chain of awaits that complete synchronously must not
// grow the stack (each one would otherwise nest a resume() frame).
TEST(Task, TenMillionSequentialAwaitsDoNotOverflowTheStack) {
  io_context ctx;
  auto loop = []() -> task<long> {
    long sum = 0;
    for (int i = 0; i < 10'000'000; ++i) sum += co_await value(1);
    co_return sum;
  };
  EXPECT_EQ(sync_wait(ctx, loop()), 10'000'000);
}

TEST(Task, DeepRecursionOfAwaits) {
  io_context ctx;
  struct rec {
    static task<int> depth(int n) {
      if (n == 0) co_return 0;
      int d = co_await depth(n - 1);
      co_return d + 1;
    }
  };
  EXPECT_EQ(sync_wait(ctx, rec::depth(100'000)), 100'000);
}

TEST(Task, YieldLetsOtherTasksRun) {
  io_context ctx;
  std::string trace;
  auto worker = [](std::string& t, char c) -> task<void> {
    for (int i = 0; i < 3; ++i) {
      t += c;
      co_await yield();
    }
  };
  ctx.spawn(worker(trace, 'a'));
  ctx.spawn(worker(trace, 'b'));
  ctx.run_until_idle();
  EXPECT_EQ(trace, "ababab");
}

TEST(Task, VoidTaskRunsToCompletion) {
  io_context ctx;
  int steps = 0;
  auto body = [](int& s) -> task<void> {
    ++s;
    co_await nothing();
    ++s;
  };
  sync_wait(ctx, body(steps));
  EXPECT_EQ(steps, 2);
}
