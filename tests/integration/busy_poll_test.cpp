// SPDX-License-Identifier: Apache-2.0
// Busy polling (io_context_options::busy_poll) on every backend: after a completion the
// loop asks the kernel without sleeping for the busy-poll time, then sleeps again; off,
// a wait sleeps at once. Counted with the loop's own metrics (kernel_waits, asleep_ns):
// a loop that spins makes many trips to the kernel and sleeps for none of them.
#include <gtest/gtest.h>
#include <time.h>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class BusyPoll : public ::testing::TestWithParam<backend_kind> {
 protected:
  void make(unsigned us) {
    try {
      ctx_.emplace(io_context_options{.backend = GetParam(), .quiet = true, .busy_poll = us});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here: " << e.what();
    }
  }
  void TearDown() override { ctx_.reset(); }
  io_context& ctx() { return *ctx_; }

  // The loop's trips to the kernel and its thread's CPU time while one task sleeps `d`
  // (right after another sleep ended: the busy-poll time starts there). Completions
  // resume their tasks as they are reaped, so the trip that ends the sleep is counted.
  struct trips {
    std::uint64_t waits;
    std::chrono::nanoseconds cpu;
  };
  trips across_sleep(std::chrono::milliseconds d) {
    return sync_wait(ctx(), [](io_context& c, std::chrono::milliseconds d) -> task<trips> {
      (void)co_await sleep_for(1ms);
      const std::uint64_t before = c.metrics().kernel_waits;
      const auto cpu0 = thread_cpu();
      auto slept = co_await sleep_for(d);
      EXPECT_TRUE(slept);
      co_return trips{c.metrics().kernel_waits - before, thread_cpu() - cpu0};
    }(ctx(), d));
  }
  static std::chrono::nanoseconds thread_cpu() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  }

 private:
  std::optional<io_context> ctx_;
};

TEST_P(BusyPoll, OffTheLoopSleepsThroughAWait) {
  make(0);
  if (IsSkipped()) return;
  EXPECT_EQ(ctx().describe().find("busy poll"), std::string::npos) << ctx().describe();
  const trips t = across_sleep(30ms);
  EXPECT_LE(t.waits, 4u) << "one 30 ms sleep took " << t.waits << " trips to the kernel";
}

// A busy-poll time longer than the sleep: the loop never sleeps, it asks again and again.
TEST_P(BusyPoll, WithinTheBusyPollTimeTheLoopDoesNotSleep) {
  make(10'000'000);  // 10 s
  if (IsSkipped()) return;
  EXPECT_NE(ctx().describe().find("busy poll 10000000 us"), std::string::npos) << ctx().describe();
  const trips t = across_sleep(30ms);
  EXPECT_GT(t.waits, 4u) << "a spinning loop asks the kernel many times in 30 ms";
}

// A short busy-poll time: the loop spins for it after the completion, then sleeps. A
// loop spinning through the 200 ms would spend most of them on the CPU; one that
// sleeps spends 2 ms and its calls (a busy machine only lowers the figure).
TEST_P(BusyPoll, AfterTheBusyPollTimeAnIdleLoopSleepsAgain) {
  make(2'000);  // 2 ms
  if (IsSkipped()) return;
  const trips t = across_sleep(200ms);
  EXPECT_LT(t.cpu, 100ms) << "the loop's thread used " << t.cpu.count() / 1'000'000 << " ms of CPU in a 200 ms sleep, "
                          << t.waits << " trips";
}

// Posts from another thread still reach a spinning loop (it is not asleep, so nobody
// wakes it: it has to find them on its own).
TEST_P(BusyPoll, PostsFromAnotherThreadReachASpinningLoop) {
  make(10'000'000);
  if (IsSkipped()) return;
  int got = sync_wait(ctx(), [](io_context& c) -> task<int> {
    int n = 0;
    for (int i = 0; i < 100; ++i) {
      std::thread t([&c, &n] { post(c, [&n] { ++n; }); });
      (void)co_await sleep_for(1ms);
      t.join();
    }
    (void)co_await sleep_for(20ms);
    co_return n;
  }(ctx()));
  EXPECT_EQ(got, 100);
}

// Data on a socket while the loop spins: the receive completes and the bytes are whole.
TEST_P(BusyPoll, ReceivesCompleteWhileTheLoopSpins) {
  make(10'000'000);
  if (IsSkipped()) return;
  socket_pair p;
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) {
      char c = static_cast<char>('a' + i % 26);
      ASSERT_EQ(::write(p.b.native_handle(), &c, 1), 1);
      std::this_thread::sleep_for(200us);
    }
  });
  std::string got = sync_wait(ctx(), [](stream_socket& s) -> task<std::string> {
    std::string all;
    std::array<std::byte, 64> buf;
    while (all.size() < 200) {
      auto n = co_await s.recv(buf);
      if (!n || *n == 0) break;
      all.append(reinterpret_cast<const char*>(buf.data()), *n);
    }
    co_return all;
  }(p.a));
  writer.join();
  ASSERT_EQ(got.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], static_cast<char>('a' + i % 26));
}

RINGIO_ALL_BACKENDS(BusyPoll);

}  // namespace
