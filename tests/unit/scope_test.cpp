// SPDX-License-Identifier: Apache-2.0
#include "ringio/scope.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

#include "ringio/io_context.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/yield.hpp"

using namespace ringio;
using namespace std::chrono_literals;

TEST(Scope, JoinWaitsForEveryChild) {
  io_context ctx;
  int done = 0;
  sync_wait(ctx, [](int& done) -> task<void> {
    scope s;
    for (int i = 0; i < 100; ++i)
      s.spawn([](int& d, int i) -> task<void> {
        auto r = co_await sleep_for(std::chrono::milliseconds(i % 7));
        if (r) ++d;
      }(done, i));
    EXPECT_GT(s.size(), 0u);
    co_await s.join();
    EXPECT_EQ(s.size(), 0u);
  }(done));
  EXPECT_EQ(done, 100);
}

TEST(Scope, ChildrenStartImmediately) {
  io_context ctx;
  sync_wait(ctx, []() -> task<void> {
    scope s;
    bool ran = false;
    s.spawn([](bool& r) -> task<void> {
      r = true;
      co_return;
    }(ran));
    EXPECT_TRUE(ran);
    co_await s.join();
  }());
}

TEST(Scope, JoinRethrowsTheFirstChildException) {
  io_context ctx;
  int survivors = 0;
  EXPECT_THROW(sync_wait(ctx,
                         [](int& survivors) -> task<void> {
                           scope s;
                           s.spawn([]() -> task<void> {
                             co_await yield();
                             throw std::runtime_error("child");
                           }());
                           s.spawn([](int& n) -> task<void> {
                             auto r = co_await sleep_for(10ms);
                             if (r) ++n;
                           }(survivors));
                           co_await s.join();
                         }(survivors)),
               std::runtime_error);
  EXPECT_EQ(survivors, 1) << "join returned before the other child finished";
}

TEST(Scope, RequestStopCancelsChildren) {
  io_context ctx;
  int cancelled = 0;
  auto t0 = std::chrono::steady_clock::now();
  sync_wait(ctx, [](int& c) -> task<void> {
    scope s;
    for (int i = 0; i < 10; ++i)
      s.spawn([](int& c) -> task<void> {
        auto r = co_await sleep_for(30s);
        if (!r && r.error() == std::errc::operation_canceled) ++c;
      }(c));
    co_await yield();
    s.request_stop();
    co_await s.join();
  }(cancelled));
  EXPECT_EQ(cancelled, 10);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(Scope, EmptyScopeJoinsAtOnce) {
  io_context ctx;
  bool joined = false;
  sync_wait(ctx, [](bool& j) -> task<void> {
    scope s;
    co_await s.join();
    j = true;
  }(joined));
  EXPECT_TRUE(joined);
}

TEST(IoContextSpawn, DetachedTasksRunUntilIdle) {
  io_context ctx;
  int n = 0;
  for (int i = 0; i < 5; ++i)
    ctx.spawn([](int& n) -> task<void> {
      auto r = co_await sleep_for(1ms);
      if (r) ++n;
    }(n));
  ctx.run_until_idle();
  EXPECT_EQ(n, 5);
}

TEST(IoContext, StopBeforeRunMakesRunReturnAtOnce) {
  io_context ctx;
  ctx.stop();
  auto t0 = std::chrono::steady_clock::now();
  ctx.run();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

TEST(IoContext, UnknownBackendInEnvironmentIsAClearError) {
  setenv("RINGIO_BACKEND", "kqueue", 1);
  try {
    io_context ctx;
    unsetenv("RINGIO_BACKEND");
    FAIL() << "no error for an unknown backend";
  } catch (const std::invalid_argument& e) {
    unsetenv("RINGIO_BACKEND");
    EXPECT_NE(std::string(e.what()).find("kqueue"), std::string::npos);
  }
}

TEST(IoContext, EnvironmentSelectsTheBackend) {
  setenv("RINGIO_BACKEND", "epoll", 1);
  io_context ctx;
  unsetenv("RINGIO_BACKEND");
  EXPECT_EQ(ctx.backend(), backend_kind::epoll);
}
