// SPDX-License-Identifier: Apache-2.0
// A process stopped and continued (SIGSTOP/SIGCONT: a shell's Ctrl-Z and fg, a debugger,
// a container being frozen) while its loop waits in the kernel: the kernel may end the
// wait with EINTR (io_uring_enter, epoll_pwait2). Seeded: a child process stops and
// continues the test process 40 times at random moments while the loop runs timers, a
// ping-pong over a socket pair, work on the blocking pool and a cross-thread post; every
// operation completes once with its result, nothing is left in flight.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// Stops and continues `target` `times` times, each pause and run 0.2-4 ms (seeded), in a
// child process. Returns the child's pid.
pid_t stop_and_continue(pid_t target, int times, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<long> gaps;
  for (int i = 0; i < 2 * times; ++i) gaps.push_back(200'000 + static_cast<long>(rng() % 3'800'000));
  const pid_t child = ::fork();
  if (child == 0) {
    for (int i = 0; i < times; ++i) {
      const timespec run{0, gaps[static_cast<std::size_t>(2 * i)]};
      ::nanosleep(&run, nullptr);
      ::kill(target, SIGSTOP);
      const timespec stopped{0, gaps[static_cast<std::size_t>(2 * i + 1)]};
      ::nanosleep(&stopped, nullptr);
      ::kill(target, SIGCONT);
    }
    ::_exit(0);
  }
  return child;
}

class StopContinue : public backend_test {};

TEST_P(StopContinue, EveryOperationCompletesOnceThroughStopsAndContinues) {
  if (GetParam() == backend_kind::sim) GTEST_SKIP() << "the simulated kernel has no waits to interrupt";
  const std::uint64_t seed = test_seed();
  constexpr int timers = 300, round_trips = 400, pool_jobs = 20;
  std::vector<int> timer_done(timers, 0), pool_done(pool_jobs, 0);
  int trips = 0;
  std::atomic<int> posted{0};
  socket_pair p;
  const pid_t child = stop_and_continue(::getpid(), 40, seed);
  ASSERT_GT(child, 0);
  // A thread posts to the loop throughout.
  std::thread poster([this, &posted] {
    for (int i = 0; i < 100; ++i) {
      post(ctx(), [&posted] { posted.fetch_add(1); });
      std::this_thread::sleep_for(500us);
    }
  });
  run([](std::vector<int>& timer_done, std::vector<int>& pool_done, int& trips, std::atomic<int>& posted,
         socket_pair& p, std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed + 1);
    scope s;
    for (int i = 0; i < timers; ++i)
      s.spawn([](int& d, std::chrono::microseconds t) -> task<void> {
        if (co_await sleep_for(t)) ++d;
        else d = -1000;
      }(timer_done[static_cast<std::size_t>(i)], std::chrono::microseconds(rng() % 150'000)));
    for (int i = 0; i < pool_jobs; ++i)
      s.spawn([](int& d, int i) -> task<void> {
        auto r = co_await spawn_blocking([i] {
          std::this_thread::sleep_for(std::chrono::milliseconds(i % 5));
          return i * 3;
        });
        if (r && *r == i * 3) ++d;
        else d = -1000;
      }(pool_done[static_cast<std::size_t>(i)], i));
    s.spawn([](socket_pair& p) -> task<void> {  // echoes every byte back
      std::byte b{};
      for (;;) {
        auto r = co_await p.b.recv(mutable_buffer(&b, 1));
        if (!r || *r == 0) co_return;
        auto w = co_await p.b.send(const_buffer(&b, 1));
        if (!w) co_return;
      }
    }(p));
    for (int i = 0; i < round_trips; ++i) {
      const auto out = static_cast<std::byte>(i & 0xff);
      std::byte in{};
      auto w = co_await p.a.send(const_buffer(&out, 1));
      auto r = co_await p.a.recv(mutable_buffer(&in, 1));
      if (w && *w == 1 && r && *r == 1 && in == out) ++trips;
    }
    (void)co_await p.a.shutdown();
    co_await s.join();
    while (posted.load() < 100) (void)co_await sleep_for(1ms);
  }(timer_done, pool_done, trips, posted, p, seed));
  poster.join();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::kill(::getpid(), SIGCONT);  // (in case the child ended between a stop and its continue)
  for (int i = 0; i < timers; ++i) EXPECT_EQ(timer_done[static_cast<std::size_t>(i)], 1) << "timer " << i;
  for (int i = 0; i < pool_jobs; ++i) EXPECT_EQ(pool_done[static_cast<std::size_t>(i)], 1) << "pool job " << i;
  EXPECT_EQ(trips, round_trips);
  EXPECT_EQ(posted.load(), 100);
  EXPECT_EQ(ctx().in_flight(), 0u);
}

RINGIO_ALL_BACKENDS(StopContinue);

}  // namespace
