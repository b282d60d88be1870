// SPDX-License-Identifier: Apache-2.0
// Min-wait batching (io_context_options::min_wait) on every backend: a sleep shorter
// than the min wait is not late, a post() from another thread ends the wait at once,
// completions that arrive within the min wait come back in one batch, and an idle loop
// does not wake at every min wait. The readiness backends ignore the option.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr unsigned long_min_wait_us = 50'000;  // 50 ms: any delay it causes is obvious

io_context_options with_min_wait(backend_kind k, unsigned us) {
  return io_context_options{.backend = k, .quiet = true, .min_wait = us};
}

bool min_wait_on(const io_context& ctx) { return ctx.describe().find("min wait") != std::string::npos; }

class MinWait : public ::testing::TestWithParam<backend_kind> {
 protected:
  void make(unsigned us) {
    try {
      ctx_.emplace(with_min_wait(GetParam(), us));
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here: " << e.what();
    }
  }
  void TearDown() override { ctx_.reset(); }
  io_context& ctx() { return *ctx_; }
  template <class T>
  T run(task<T> t) {
    return sync_wait(*ctx_, std::move(t));
  }

 private:
  std::optional<io_context> ctx_;
};

// Keeps a receive waiting on `s` until it is stopped (more than one completion in
// flight is what makes the loop batch).
task<void> idle_receive(stream_socket& s, std::stop_token stop) {
  std::array<std::byte, 64> buf;
  for (;;) {
    auto n = co_await s.recv(buf).with_stop(stop);
    if (!n || *n == 0) co_return;
  }
}

// Writes one byte to `fd` every `gap` until `done`.
void trickle(int fd, std::chrono::microseconds gap, const std::atomic<bool>& done) {
  while (!done.load()) {
    char c = 'x';
    while (::write(fd, &c, 1) < 0 && errno == EINTR) {
    }
    std::this_thread::sleep_for(gap);
  }
}

TEST_P(MinWait, SleepShorterThanTheMinWaitIsNotLate) {
  make(long_min_wait_us);
  if (IsSkipped()) return;
  socket_pair quiet, busy;
  std::atomic<bool> done{false};
  std::thread writer(trickle, busy.b.native_handle(), 300us, std::cref(done));
  auto took = run([](socket_pair& quiet, socket_pair& busy) -> task<std::vector<steady::duration>> {
    std::stop_source stop;
    scope s;
    s.spawn(idle_receive(quiet.a, stop.get_token()));
    s.spawn(idle_receive(busy.a, stop.get_token()));
    std::vector<steady::duration> took;
    for (int i = 0; i < 30; ++i) {
      auto t0 = steady::now();
      auto slept = co_await sleep_for(1ms);
      EXPECT_TRUE(slept);
      took.push_back(steady::now() - t0);
    }
    stop.request_stop();
    co_await s.join();
    co_return took;
  }(quiet, busy));
  done = true;
  writer.join();
  // The median, not the worst: a busy machine delays a few wake-ups by tens of ms
  // whatever the loop does, while sleeps held by the min wait would all take ~50 ms.
  std::sort(took.begin(), took.end());
  const auto ms = [](steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  EXPECT_LT(took[took.size() / 2], 20ms) << "1 ms sleeps under a 50 ms min wait: median " << ms(took[took.size() / 2])
                                         << " ms, worst " << ms(took.back()) << " ms";
}

// Two receives in flight; the peers get a byte 2 ms apart: with a 20 ms min wait both
// completions come back from one wait, so both receives finish in the same iteration.
TEST_P(MinWait, CompletionsWithinTheMinWaitComeInOneBatch) {
  make(20'000);
  if (IsSkipped()) return;
  const bool batching = min_wait_on(ctx());
  socket_pair one, two;
  std::promise<void> armed;
  auto ready = armed.get_future();
  std::thread writer([&] {
    ready.wait();
    std::this_thread::sleep_for(5ms);
    char c = 'x';
    while (::write(one.b.native_handle(), &c, 1) < 0 && errno == EINTR) {
    }
    std::this_thread::sleep_for(2ms);
    while (::write(two.b.native_handle(), &c, 1) < 0 && errno == EINTR) {
    }
  });
  auto [first, second, iterations_between] =
      run([](socket_pair& one, socket_pair& two,
             std::promise<void>& armed) -> task<std::tuple<steady::time_point, steady::time_point, std::uint64_t>> {
        steady::time_point t1, t2;
        std::uint64_t i1 = 0, i2 = 0;
        auto wait_one = [](stream_socket& s, steady::time_point& at, std::uint64_t& iter) -> task<void> {
          std::array<std::byte, 8> buf;
          auto n = co_await s.recv(buf);
          EXPECT_TRUE(n && *n == 1);
          at = steady::now();
          iter = io_context::current()->stats().iterations;
        };
        scope s;
        s.spawn(wait_one(one.a, t1, i1));
        s.spawn(wait_one(two.a, t2, i2));
        armed.set_value();
        co_await s.join();
        co_return std::tuple{t1, t2, i2 - i1};
      }(one, two, armed));
  writer.join();
  auto gap = second > first ? second - first : first - second;
  if (!batching) GTEST_SKIP() << "no min wait on " << to_string(GetParam()) << " here";
  EXPECT_LT(gap, 1ms) << "the first completion was returned alone";
  EXPECT_EQ(iterations_between, 0u);
}

// With receives in flight and nothing arriving, the loop sleeps until the timer: it does
// not return at every min wait.
TEST_P(MinWait, IdleLoopDoesNotWakeAtEveryMinWait) {
  make(1000);
  if (IsSkipped()) return;
  socket_pair a, b;
  auto waits = run([](socket_pair& a, socket_pair& b) -> task<std::uint64_t> {
    std::stop_source stop;
    scope s;
    s.spawn(idle_receive(a.a, stop.get_token()));
    s.spawn(idle_receive(b.a, stop.get_token()));
    auto before = io_context::current()->stats().kernel_waits;
    auto slept = co_await sleep_for(100ms);
    EXPECT_TRUE(slept);
    auto n = io_context::current()->stats().kernel_waits - before;
    stop.request_stop();
    co_await s.join();
    co_return n;
  }(a, b));
  EXPECT_LT(waits, 20u) << "a 1 ms min wait over 100 ms idle";
}

// A with_timeout deadline ends in a completion like any other, which a min wait may
// hold: it is late by at most the min wait, never lost.
TEST_P(MinWait, DeadlineIsLateByAtMostTheMinWait) {
  make(long_min_wait_us);
  if (IsSkipped()) return;
  socket_pair quiet, other;
  auto took = run([](socket_pair& quiet, socket_pair& other) -> task<steady::duration> {
    std::stop_source stop;
    scope s;
    s.spawn(idle_receive(other.a, stop.get_token()));
    std::array<std::byte, 8> buf;
    auto t0 = steady::now();
    auto r = co_await with_timeout(quiet.a.recv(buf), 5ms);
    auto took = steady::now() - t0;
    EXPECT_FALSE(r);
    if (!r) {
      EXPECT_EQ(r.error(), std::errc::timed_out);
    }
    stop.request_stop();
    co_await s.join();
    co_return took;
  }(quiet, other));
  EXPECT_GE(took, 5ms);
  EXPECT_LT(took, 5ms + std::chrono::microseconds(long_min_wait_us) + 30ms);
}

TEST_P(MinWait, DescribeSaysWhetherItIsOn) {
  make(200);
  if (IsSkipped()) return;
  if (GetParam() == backend_kind::epoll) {
    EXPECT_FALSE(min_wait_on(ctx()));
  }
  if (min_wait_on(ctx())) {
    EXPECT_NE(ctx().describe().find("min wait 200 us"), std::string::npos);
  }
}

// post() from a thread outside ringio ends the min wait at once. The posts come 5 ms
// apart, so each lands inside the 50 ms min wait of the loop's next sleep.
TEST_P(MinWait, CrossThreadPostWakesTheLoopPromptly) {
  std::promise<io_context*> started;
  std::promise<void> finish;
  auto finish_future = finish.get_future();
  bool skipped = false;
  std::thread loop([&] {
    std::optional<io_context> ctx;
    try {
      ctx.emplace(with_min_wait(GetParam(), long_min_wait_us));
    } catch (const std::system_error&) {
      skipped = true;
      started.set_value(nullptr);
      return;
    }
    socket_pair a, b;
    std::stop_source stop;
    ctx->spawn(idle_receive(a.a, stop.get_token()));
    ctx->spawn(idle_receive(b.a, stop.get_token()));
    started.set_value(&*ctx);
    ctx->run();
    stop.request_stop();
    ctx->run_until_idle();
    finish_future.wait();
  });
  io_context* ctx = started.get_future().get();
  if (ctx == nullptr) {
    loop.join();
    GTEST_SKIP() << "backend cannot start here";
  }
  std::this_thread::sleep_for(10ms);
  steady::duration worst{};
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(5ms);
    std::promise<void> ran;
    auto ran_future = ran.get_future();
    auto t0 = steady::now();
    post(*ctx, [&ran] { ran.set_value(); });
    ran_future.wait();
    worst = std::max(worst, steady::now() - t0);
  }
  ctx->stop();
  finish.set_value();
  loop.join();
  EXPECT_FALSE(skipped);
  EXPECT_LT(worst, 20ms) << "a post waited " << std::chrono::duration<double, std::milli>(worst).count()
                         << " ms under a 50 ms min wait";
}

RINGIO_ALL_BACKENDS(MinWait);

}  // namespace
