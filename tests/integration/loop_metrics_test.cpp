// SPDX-License-Identifier: Apache-2.0
// loop_metrics: what a loop counts for the operations its tasks run, on every backend,
// and reading the counters from another thread while the loops run.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <stop_token>
#include <thread>

#include "ringio/io_context.hpp"
#include "ringio/post.hpp"
#include "ringio/runtime.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/when_all.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace std::chrono_literals;

namespace {

constexpr std::size_t io = 0, timer = 1;

class LoopMetrics : public ringio_test::backend_test {};

TEST_P(LoopMetrics, CountsOperationsBytesAndOutcomes) {
  const ringio::loop_metrics before = ctx().metrics();
  ringio_test::socket_pair p;
  run([](ringio_test::socket_pair& p) -> ringio::task<void> {
    (void)co_await ringio::sleep_for(1ms);
    std::array<char, 100> out{}, in{};
    auto sent = co_await p.a.send_all(ringio::const_buffer(out.data(), out.size()));
    EXPECT_TRUE(sent);
    std::size_t got = 0;
    while (got < in.size()) {
      auto n = co_await p.b.recv(ringio::mutable_buffer(in.data() + got, in.size() - got));
      if (!n || *n == 0) break;
      got += *n;
    }
    EXPECT_EQ(got, in.size());
    auto timed_out = co_await ringio::with_timeout(p.b.recv(ringio::mutable_buffer(in.data(), in.size())), 20ms);
    EXPECT_FALSE(timed_out);
  }(p));
  const ringio::loop_metrics m = ctx().metrics();
  EXPECT_GE(m.ops_started[timer] - before.ops_started[timer], 1u);
  EXPECT_GE(m.ops_completed[timer] - before.ops_completed[timer], 1u);
  EXPECT_GE(m.ops_started[io] - before.ops_started[io], 2u);
  EXPECT_EQ(m.bytes_out - before.bytes_out, 100u);
  EXPECT_EQ(m.bytes_in - before.bytes_in, 100u);
  EXPECT_GE(m.ops_failed[io] - before.ops_failed[io], 1u);  // the receive that timed out
  EXPECT_GT(m.iterations, before.iterations);
  EXPECT_GT(m.kernel_waits, before.kernel_waits);
  EXPECT_GT(m.stall_count(), before.stall_count());
  EXPECT_GT(m.asleep_ns, before.asleep_ns);  // the sleep blocked the loop
  // Everything started has its result: nothing is left in flight.
  for (std::size_t k = 0; k < ringio::loop_metrics::kinds; ++k) EXPECT_EQ(m.ops_started[k], m.ops_completed[k]) << k;
}

TEST_P(LoopMetrics, CountsCancelledOperations) {
  ringio_test::socket_pair p;
  const ringio::loop_metrics before = ctx().metrics();
  run([](ringio_test::socket_pair& p) -> ringio::task<void> {
    std::stop_source stop;
    std::array<char, 8> in{};
    auto waiting = [](ringio_test::socket_pair& p, std::array<char, 8>& in, std::stop_token t) -> ringio::task<void> {
      auto r = co_await p.b.recv(ringio::mutable_buffer(in.data(), in.size())).with_stop(std::move(t));
      EXPECT_FALSE(r);
    };
    auto canceller = [](std::stop_source& s) -> ringio::task<void> {
      (void)co_await ringio::sleep_for(5ms);
      s.request_stop();
    };
    co_await ringio::when_all(waiting(p, in, stop.get_token()), canceller(stop));
  }(p));
  const ringio::loop_metrics m = ctx().metrics();
  EXPECT_EQ(m.ops_cancelled[io] - before.ops_cancelled[io], 1u);
}

// A task that a completion resumes and that then holds the thread is a long run of the
// loop, not time asleep: the completions are dispatched after the loop comes back from
// the kernel, inside the backend's poll.
TEST_P(LoopMetrics, WorkAfterACompletionIsARunNotSleep) {
  ringio_test::socket_pair p;
  const ringio::loop_metrics before = ctx().metrics();
  const auto start = std::chrono::steady_clock::now();
  run([](ringio_test::socket_pair& p) -> ringio::task<void> {
    std::array<char, 8> out{}, in{};
    auto sending = [](ringio_test::socket_pair& p, std::array<char, 8>& out) -> ringio::task<void> {
      (void)co_await ringio::sleep_for(2ms);
      EXPECT_TRUE(co_await p.a.send_all(ringio::const_buffer(out.data(), out.size())));
    };
    auto receiving = [](ringio_test::socket_pair& p, std::array<char, 8>& in) -> ringio::task<void> {
      EXPECT_TRUE(co_await p.b.recv(ringio::mutable_buffer(in.data(), in.size())));
      std::this_thread::sleep_for(30ms);      // resumed by the receive's completion: a stall
      (void)co_await ringio::sleep_for(1ms);  // back to the kernel: the run ends
    };
    co_await ringio::when_all(receiving(p, in), sending(p, out));
  }(p));
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  const ringio::loop_metrics m = ctx().metrics();
  // Runs over 10 ms: the count above the bucket bounded by 0.01 s.
  std::size_t bound_10ms = 0;
  while (ringio::loop_metrics::stall_bounds[bound_10ms] < 0.01) ++bound_10ms;
  std::uint64_t long_runs = 0;
  for (std::size_t b = bound_10ms + 1; b < ringio::loop_metrics::stall_buckets; ++b)
    long_runs += m.stall_buckets_count[b] - before.stall_buckets_count[b];
  EXPECT_GE(long_runs, 1u);
  EXPECT_GE(m.stall_sum_ns - before.stall_sum_ns, 30'000'000u);
  // The 30 ms are not counted asleep.
  EXPECT_LE(m.asleep_ns - before.asleep_ns, static_cast<std::uint64_t>(elapsed.count()) - 30'000'000u);
}

// A run starts when the loop is entered and ends when it returns: a task that holds
// the thread without ever going to the kernel is a run of the loop, and the time the
// thread spends outside the loop (between two sync_waits) is not.
TEST_P(LoopMetrics, RunsStartAndEndWithTheLoop) {
  if (GetParam() == ringio::backend_kind::sim) GTEST_SKIP() << "simulated time";
  const ringio::loop_metrics before = ctx().metrics();
  run([]() -> ringio::task<void> {
    std::this_thread::sleep_for(30ms);  // no trip to the kernel before it ends
    co_return;
  }());
  const ringio::loop_metrics held = ctx().metrics();
  EXPECT_GE(held.stall_sum_ns - before.stall_sum_ns, 30'000'000u);
  EXPECT_GE(held.stall_count() - before.stall_count(), 1u);
  std::this_thread::sleep_for(300ms);  // outside the loop
  run([]() -> ringio::task<void> { co_return; }());
  const ringio::loop_metrics after = ctx().metrics();
  EXPECT_LT(after.stall_sum_ns - held.stall_sum_ns, 300'000'000u) << "time outside the loop counted as a run";
}

TEST_P(LoopMetrics, TimingOffKeepsCountersAndSkipsTheClock) {
  ringio::io_context quiet(ringio::io_context_options{.backend = GetParam(), .quiet = true, .loop_timing = false});
  ringio::sync_wait(quiet, []() -> ringio::task<void> { (void)co_await ringio::sleep_for(1ms); }());
  const ringio::loop_metrics m = quiet.metrics();
  EXPECT_GE(m.ops_completed[timer], 1u);
  EXPECT_GT(m.iterations, 0u);
  EXPECT_EQ(m.stall_count(), 0u);
  EXPECT_EQ(m.asleep_ns, 0u);
}

RINGIO_ALL_BACKENDS(LoopMetrics);

// Another thread reads the loops' counters while they run (no data race: run under
// TSan too), and the runtime's sum equals the sum of its loops.
TEST(RuntimeMetrics, ReadableFromAnotherThreadWhileLoopsRun) {
  ringio::runtime rt({.threads = 2, .context = {.quiet = true}});
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      ringio::loop_metrics sum = rt.metrics();
      EXPECT_GE(sum.ops_started[timer], sum.ops_completed[timer]);
    }
  });
  rt.run_on_each([](ringio::io_context&, unsigned) -> ringio::task<void> {
    for (int i = 0; i < 20; ++i) (void)co_await ringio::sleep_for(1ms);
  });
  // A task left running is counted alive; posts from this thread are counted too.
  std::atomic<int> posted{0};
  ringio::post(rt.context(1), [&] { ++posted; });
  ringio::post(rt.context(1), [&] {
    rt.context(1).spawn([]() -> ringio::task<void> { (void)co_await ringio::sleep_for(1h); }());
    ++posted;
  });
  while (posted.load() < 2) std::this_thread::yield();
  done = true;
  reader.join();
  const ringio::loop_metrics l0 = rt.context(0).metrics(), l1 = rt.context(1).metrics();
  EXPECT_GE(l0.ops_completed[timer], 20u);
  EXPECT_GE(l1.ops_completed[timer], 20u);
  EXPECT_EQ(l1.tasks_alive - l0.tasks_alive, 1u);
  EXPECT_GE(l1.posts_received, 2u);
  ringio::loop_metrics both = l0;
  both += l1;
  const ringio::loop_metrics sum = rt.metrics();
  EXPECT_GE(sum.ops_completed[timer], both.ops_completed[timer]);
  rt.stop();
  // The loops are gone: their last counts stay, their tasks are no more.
  const ringio::loop_metrics after = rt.metrics();
  EXPECT_GE(after.iterations, sum.iterations);
  EXPECT_GE(after.ops_completed[timer], sum.ops_completed[timer]);
  EXPECT_EQ(after.tasks_alive, 0u);
  EXPECT_EQ(rt.metrics_of(1).tasks_alive, 0u);
  EXPECT_GE(rt.metrics_of(1).posts_received, 2u);
}

}  // namespace
