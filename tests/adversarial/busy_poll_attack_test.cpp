// SPDX-License-Identifier: Apache-2.0
// Busy polling (io_context_options::busy_poll) against the rest of the library's
// promises, on every backend: a loop that spins after it found work still finds posts,
// stop(), channel sends and event sets from other threads and loops (nobody wakes a loop
// that is not asleep), keeps its sleeps and deadlines on time, cancels and shuts down
// with operations in flight, goes back to sleep when idle, and takes extreme values
// (1 us, UINT_MAX us) without overflow or hang. The simulated backend keeps its virtual
// time and its determinism with busy polling on.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr unsigned kForever = UINT_MAX;  // about 71 minutes
constexpr auto kLiveness = 20s;          // generous bound for anything that must happen

using steady = std::chrono::steady_clock;

std::uint64_t seed_from_env() {
  if (const char* s = std::getenv("BUSY_POLL_ATTACK_SEED")) return std::strtoull(s, nullptr, 10);
  return static_cast<std::uint64_t>(steady::now().time_since_epoch().count());
}

std::chrono::nanoseconds cpu_of(pthread_t t) {
  clockid_t id{};
  if (::pthread_getcpuclockid(t, &id) != 0) return {};
  timespec ts{};
  ::clock_gettime(id, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

template <class Pred>
bool eventually(Pred pred, std::chrono::nanoseconds limit = kLiveness) {
  const auto end = steady::now() + limit;
  while (!pred()) {
    if (steady::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

// Waits until done(); fails (returns false) only when progress() stops changing for
// kLiveness. On a loaded machine loops that spin share the cores slowly, but a lost
// wake-up stops them for good. Sleeps between looks (the loops need the cores) and
// calls tick() at each.
template <class Progress, class Done, class Tick>
bool keeps_moving_until(Progress progress, Done done, Tick tick) {
  auto last = progress();
  auto moved = steady::now();
  while (!done()) {
    std::this_thread::sleep_for(1ms);
    tick();
    const auto seen = progress();
    const auto now = steady::now();
    if (seen != last) {
      last = seen;
      moved = now;
    } else if (now - moved > kLiveness) {
      return false;
    }
  }
  return true;
}

bool moves_to(const std::atomic<int>& count, int target) {
  return keeps_moving_until([&] { return count.load(std::memory_order_acquire); },
                            [&] { return count.load(std::memory_order_acquire) == target; }, [] {});
}

// Waits `us` microseconds: spins for short gaps (sleep_for is too coarse), sleeps for long ones.
void pause_us(unsigned us) {
  if (us == 0) return;
  if (us < 200) {
    const auto end = steady::now() + std::chrono::microseconds(us);
    while (steady::now() < end) {
    }
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
}

// Runs `fn` on a thread of its own and waits up to `limit` for it. A run that does not
// end is reported and left behind (its state leaks), so the other tests still run.
bool finishes_within(std::function<void()> fn, std::chrono::nanoseconds limit = kLiveness) {
  struct shared {
    std::function<void()> fn;
    std::atomic<bool> done{false};
  };
  auto* s = new shared{std::move(fn)};
  std::thread t([s] {
    s->fn();
    s->done.store(true);
  });
  if (!eventually([s] { return s->done.load(); }, limit)) {
    t.detach();
    return false;
  }
  t.join();
  delete s;
  return true;
}

// An io_context made, run (run()) and destroyed on a thread of its own.
class loop_thread {
 public:
  explicit loop_thread(io_context_options o) : s_(new state) {
    std::promise<void> ready;
    auto f = ready.get_future();
    state* s = s_;
    thread_ = std::thread([s, o, &ready] {
      try {
        s->ctx.emplace(o);
      } catch (const std::system_error& e) {
        s->error = e.what();
        s->finished.store(true);
        ready.set_value();
        return;
      }
      ready.set_value();
      s->ctx->run();
      s->returned.store(true);
      s->ctx.reset();
      s->finished.store(true);
    });
    f.wait();
  }
  loop_thread(const loop_thread&) = delete;
  loop_thread& operator=(const loop_thread&) = delete;
  ~loop_thread() {
    if (!thread_.joinable()) return;
    if (!stopped_ && ok()) s_->ctx->stop();
    join();
  }
  [[nodiscard]] bool ok() const { return s_->error.empty(); }
  [[nodiscard]] const std::string& error() const { return s_->error; }
  io_context& ctx() { return *s_->ctx; }
  pthread_t native() { return thread_.native_handle(); }
  // stop() from this thread, then run() must return and the context be destroyed.
  bool stop_and_join(std::chrono::nanoseconds limit = kLiveness) {
    if (ok() && !stopped_) {
      stopped_ = true;
      s_->ctx->stop();
    }
    return join(limit);
  }
  [[nodiscard]] bool run_returned() const { return s_->returned.load(); }

 private:
  struct state {
    std::optional<io_context> ctx;
    std::string error;
    std::atomic<bool> returned{false};
    std::atomic<bool> finished{false};
  };
  bool join(std::chrono::nanoseconds limit = kLiveness) {
    if (!thread_.joinable()) return true;
    state* s = s_;
    if (!eventually([s] { return s->finished.load(); }, limit)) {
      thread_.detach();  // hangs: leave it and its state behind
      return false;
    }
    thread_.join();
    delete s_;
    s_ = nullptr;
    return true;
  }
  state* s_;
  std::thread thread_;
  bool stopped_ = false;
};

io_context_options opts(backend_kind k, unsigned busy_poll, bool futex_wake = false) {
  return io_context_options{.backend = k, .quiet = true, .futex_wake = futex_wake, .busy_poll = busy_poll};
}

class BusyPollAttack : public ::testing::TestWithParam<backend_kind> {
 protected:
  // A loop thread for this backend, or a skip with the reason.
  std::unique_ptr<loop_thread> start(unsigned busy_poll, bool futex_wake = false) {
    auto l = std::make_unique<loop_thread>(opts(GetParam(), busy_poll, futex_wake));
    if (!l->ok()) return nullptr;
    return l;
  }
  std::unique_ptr<io_context> make(unsigned busy_poll) {
    try {
      return std::make_unique<io_context>(opts(GetParam(), busy_poll));
    } catch (const std::system_error&) {
      return nullptr;
    }
  }
  static std::uint64_t waits_of(io_context& c) { return c.metrics().kernel_waits; }
};

#define SKIP_IF_NO_LOOP(l) \
  if (!(l)) GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here"

// ---- describe() ------------------------------------------------------------------

TEST_P(BusyPollAttack, DescribeNamesTheBusyPollTimeExactly) {
  for (unsigned us : {1u, 50u, 4'294'968u, kForever}) {
    auto c = make(us);
    if (!c) GTEST_SKIP() << "backend cannot start here";
    const std::string want = "busy poll " + std::to_string(us) + " us";
    EXPECT_NE(c->describe().find(want), std::string::npos) << "busy_poll=" << us << ": " << c->describe();
  }
  auto off = make(0);
  ASSERT_TRUE(off);
  EXPECT_EQ(off->describe().find("busy poll"), std::string::npos) << off->describe();
}

// ---- extreme values ----------------------------------------------------------------

// While one task sleeps `d`, right after another sleep ended: the trips to the kernel,
// and the time the loop spent blocked in it (counted over 1 ms more).
struct across_sleep {
  std::uint64_t waits = 0;
  std::uint64_t asleep_ns = 0;
};
// `at_start` runs as the sleep of `d` begins.
across_sleep waits_across_sleep(io_context& c, std::chrono::milliseconds d, std::function<void()> at_start = {}) {
  return sync_wait(
      c, [](io_context& c, std::chrono::milliseconds d, std::function<void()> at_start) -> task<across_sleep> {
        // A new loop has found no work yet, so it sleeps through the first sleep; it counts
        // that time after it has run what it reaped, after this task resumed: a second
        // sleep, spun through, brings the count up to date.
        (void)co_await sleep_for(1ms);
        (void)co_await sleep_for(1ms);
        const loop_metrics before = c.metrics();
        if (at_start) at_start();
        auto slept = co_await sleep_for(d);
        EXPECT_TRUE(slept);
        const std::uint64_t waits = c.metrics().kernel_waits - before.kernel_waits;
        (void)co_await sleep_for(1ms);  // (the same: a sleep through `d` is counted after it)
        co_return across_sleep{waits, c.metrics().asleep_ns - before.asleep_ns};
      }(c, d, std::move(at_start)));
}

// Values whose microseconds overflow 32 bits (4,294,968 us) or a signed 32-bit count
// (2,147,484 us) once taken as nanoseconds, and the largest value: all of them are
// seconds or more, so the loop spins through a 30 ms sleep: it never blocks in the
// kernel. (How many trips it makes depends on the scheduler: a loop thread that is
// preempted for the whole 30 ms makes one, so the count is not the measure.)
TEST_P(BusyPollAttack, LargeValuesSpinWithoutOverflow) {
  for (unsigned us : {2'147'484u, 4'294'968u, 8'589'935u, kForever}) {
    auto c = make(us);
    if (!c) GTEST_SKIP() << "backend cannot start here";
    const across_sleep w = waits_across_sleep(*c, 30ms);
    EXPECT_GE(w.waits, 1u) << "busy_poll=" << us << " us";
    EXPECT_EQ(w.asleep_ns, 0u) << "busy_poll=" << us << " us: the loop blocked " << w.asleep_ns / 1000
                               << " us in the kernel during a 30 ms sleep (" << w.waits << " trips)";
  }
  // The measure sees a loop that sleeps: 1 ms of busy polling ends during the 30 ms.
  auto c = make(1000);
  ASSERT_TRUE(c);
  const across_sleep w = waits_across_sleep(*c, 30ms);
  EXPECT_GT(w.asleep_ns, 0u) << "busy_poll=1000 us: the loop never blocked in a 30 ms sleep";
}

// A spinning loop whose thread does not run for the whole sleep (a loaded machine
// preempts it): stopped right after it armed the timer (SIGSTOP from a post, run on
// the next pass) and continued 50 ms later by a child process, it makes only a trip or
// two, and still never blocks in the kernel.
TEST_P(BusyPollAttack, SpinningLoopStoppedThroughASleepNeverBlocks) {
  auto c = make(kForever);
  if (!c) GTEST_SKIP() << "backend cannot start here";
  pid_t waker = -1;
  const across_sleep w = waits_across_sleep(*c, 30ms, [&] {
    const pid_t parent = ::getpid();
    waker = ::fork();
    if (waker == 0) {
      const timespec pause{0, 50'000'000};
      ::nanosleep(&pause, nullptr);
      ::kill(parent, SIGCONT);
      ::_exit(0);
    }
    post(*c, [] { ::raise(SIGSTOP); });
  });
  ASSERT_GT(waker, 0);
  int status = 0;
  EXPECT_EQ(::waitpid(waker, &status, 0), waker);
  EXPECT_GE(w.waits, 1u);
  EXPECT_EQ(w.asleep_ns, 0u) << "the loop blocked " << w.asleep_ns / 1000 << " us in the kernel (" << w.waits
                             << " trips)";
  std::printf("stopped through a 30 ms sleep: %llu trip(s) to the kernel\n", static_cast<unsigned long long>(w.waits));
}

// While it spins, the loop asks the kernel once per loop pass: no pass without a trip,
// no pass with several.
TEST_P(BusyPollAttack, OneTripToTheKernelPerPassWhileSpinning) {
  auto c = make(kForever);
  if (!c) GTEST_SKIP() << "backend cannot start here";
  struct counts {
    std::uint64_t waits, iterations, asleep_ns;
  };
  const counts d = sync_wait(*c, [](io_context& c) -> task<counts> {
    (void)co_await sleep_for(1ms);  // (slept through: see waits_across_sleep)
    (void)co_await sleep_for(1ms);
    const loop_metrics m0 = c.metrics();
    (void)co_await sleep_for(30ms);
    (void)co_await sleep_for(1ms);
    const loop_metrics m1 = c.metrics();
    co_return counts{m1.kernel_waits - m0.kernel_waits, m1.iterations - m0.iterations, m1.asleep_ns - m0.asleep_ns};
  }(*c));
  // (A loop thread preempted for the whole sleep makes one pass: no minimum count.)
  EXPECT_GE(d.iterations, 1u);
  EXPECT_EQ(d.asleep_ns, 0u) << "a loop spinning for ever blocked in the kernel";
  EXPECT_LE(d.waits, d.iterations + 2) << "more trips to the kernel than loop passes while spinning";
  EXPECT_GE(d.waits + 2, d.iterations) << "loop passes without a trip to the kernel while spinning";
}

// Busy polling with the io_uring options that change how the loop waits (SQPOLL, a
// minimum wait): posts from another thread, sleeps and stop() still work.
TEST_P(BusyPollAttack, WithSqpollAndMinWait) {
  if (GetParam() != backend_kind::uring) GTEST_SKIP() << "io_uring options";
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant == 0 ? "sqpoll" : "min_wait 5000 us");
    for (unsigned bp : {1u, 100u, kForever}) {
      io_context_options o = opts(GetParam(), bp);
      if (variant == 0) o.sqpoll = true;
      else o.min_wait = 5'000;
      auto l = std::make_unique<loop_thread>(o);
      if (!l->ok()) {
        std::printf("variant %d cannot start here: %s\n", variant, l->error().c_str());
        break;
      }
      std::atomic<int> seen{0};
      for (int i = 0; i < 300; ++i) {
        post(l->ctx(), [&seen] { seen.fetch_add(1, std::memory_order_release); });
        ASSERT_TRUE(eventually([&] { return seen.load(std::memory_order_acquire) == i + 1; }))
            << "busy_poll=" << bp << ": post " << i << " never ran";
        if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(bp == kForever ? 50 : 2 * bp));
      }
      std::atomic<std::int64_t> took_us{-1};
      post(l->ctx(), [&] {
        l->ctx().spawn([](std::atomic<std::int64_t>& took_us) -> task<void> {
          const auto t0 = steady::now();
          (void)co_await sleep_for(10ms);
          took_us.store(std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - t0).count());
        }(took_us));
      });
      ASSERT_TRUE(eventually([&] { return took_us.load() >= 0; }))
          << "busy_poll=" << bp << ": a 10 ms sleep never ended";
      EXPECT_GE(took_us.load(), 10'000) << "busy_poll=" << bp;
      EXPECT_TRUE(l->stop_and_join()) << "busy_poll=" << bp;
    }
  }
}

// The largest value: stop() from another thread and the destruction end at once.
TEST_P(BusyPollAttack, LargestValueStopAndDestructionDoNotHang) {
  auto l = start(kForever);
  SKIP_IF_NO_LOOP(l);
  std::atomic<bool> ran{false};
  post(l->ctx(), [&ran] { ran.store(true); });
  ASSERT_TRUE(eventually([&] { return ran.load(); }));
  std::this_thread::sleep_for(20ms);  // spinning now
  EXPECT_TRUE(l->stop_and_join()) << "run() or ~io_context did not return within 20 s of stop()";
}

// One microsecond: operations, posts and sleeps behave as with busy polling off.
TEST_P(BusyPollAttack, OneMicrosecondBehavesNormally) {
  auto c = make(1);
  if (!c) GTEST_SKIP() << "backend cannot start here";
  socket_pair p;
  const int got = sync_wait(*c, [](stream_socket& a, stream_socket& b) -> task<int> {
    int ok = 0;
    for (int i = 0; i < 200; ++i) {
      std::array<std::byte, 1> out{static_cast<std::byte>(i)};
      auto s = co_await a.send(out);
      std::array<std::byte, 1> in{};
      auto r = co_await with_timeout(b.recv(in), 10s);
      if (s && r && *r == 1 && in[0] == out[0]) ++ok;
      (void)co_await sleep_for(std::chrono::microseconds(i % 7));
    }
    co_return ok;
  }(p.a, p.b));
  EXPECT_EQ(got, 200);
}

// ---- the idle loop -----------------------------------------------------------------

struct idle_sample {
  std::uint64_t waits;
  std::chrono::nanoseconds cpu;
};

// Trips to the kernel and CPU time of a loop thread over `window`, starting `settle` from now.
idle_sample sample_idle(loop_thread& l, std::chrono::milliseconds settle, std::chrono::milliseconds window) {
  std::this_thread::sleep_for(settle);
  const std::uint64_t w0 = l.ctx().metrics().kernel_waits;
  const auto c0 = cpu_of(l.native());
  std::this_thread::sleep_for(window);
  return {l.ctx().metrics().kernel_waits - w0, cpu_of(l.native()) - c0};
}

// A loop that never found work sleeps (after at most its busy-poll time).
TEST_P(BusyPollAttack, IdleLoopThatNeverFoundWorkSleeps) {
  auto off = start(0);
  SKIP_IF_NO_LOOP(off);
  const idle_sample base = sample_idle(*off, 50ms, 300ms);
  ASSERT_TRUE(off->stop_and_join());
  auto l = start(2'000);
  ASSERT_TRUE(l);
  const idle_sample s = sample_idle(*l, 100ms, 300ms);
  EXPECT_LE(s.waits, base.waits + 50) << "idle loop with busy_poll=2000 us made " << s.waits
                                      << " trips to the kernel in 300 ms (busy poll off: " << base.waits << "); CPU "
                                      << s.cpu.count() / 1'000'000 << " ms";
  EXPECT_TRUE(l->stop_and_join());
}

// After a post from another thread the loop spins for the busy-poll time, then sleeps.
TEST_P(BusyPollAttack, IdleLoopSleepsAgainAfterAPost) {
  auto l = start(2'000);
  SKIP_IF_NO_LOOP(l);
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) post(l->ctx(), [&ran] { ran.fetch_add(1); });
  ASSERT_TRUE(eventually([&] { return ran.load() == 5; }));
  const idle_sample s = sample_idle(*l, 100ms, 300ms);
  EXPECT_LE(s.waits, 50u) << "trips to the kernel in 300 ms, 100 ms after the last post; CPU "
                          << s.cpu.count() / 1'000'000 << " ms";
  EXPECT_LT(s.cpu, 150ms) << "the loop's thread used " << s.cpu.count() / 1'000'000 << " ms of CPU in 300 ms idle";
  EXPECT_TRUE(l->stop_and_join());
}

task<void> wait_for_bytes(stream_socket& s, std::atomic<int>& outcome) {
  std::array<std::byte, 16> buf{};
  auto r = co_await s.recv(buf);
  outcome.store(r ? 1 : (r.error() == std::errc::operation_canceled ? 2 : 3));
}

// With operations in flight (a receive that gets nothing) the idle loop sleeps again
// after the busy-poll time, and stop() plus the destruction cancel the receive.
TEST_P(BusyPollAttack, IdleLoopWithAnOperationInFlightSleepsAgain) {
  auto l = start(2'000);
  SKIP_IF_NO_LOOP(l);
  socket_pair p;
  std::atomic<int> outcome{0};
  std::atomic<bool> spawned{false};
  post(l->ctx(), [&] {
    l->ctx().spawn(wait_for_bytes(p.a, outcome));
    spawned.store(true);
  });
  ASSERT_TRUE(eventually([&] { return spawned.load(); }));
  const idle_sample s = sample_idle(*l, 100ms, 300ms);
  EXPECT_LE(s.waits, 50u) << "trips to the kernel in 300 ms with a receive in flight; CPU " << s.cpu.count() / 1'000'000
                          << " ms";
  EXPECT_TRUE(l->stop_and_join());
  EXPECT_EQ(outcome.load(), 2) << "the receive in flight ends with operation_canceled when the context goes";
}

// ---- cross-thread posts and stop() ---------------------------------------------------

// A loop spinning (the largest value) runs every post of another thread, one at a time.
TEST_P(BusyPollAttack, PostsReachASpinningLoopOneByOne) {
  auto l = start(kForever);
  SKIP_IF_NO_LOOP(l);
  std::atomic<int> seen{0};
  for (int i = 0; i < 2'000; ++i) {
    post(l->ctx(), [&seen] { seen.fetch_add(1, std::memory_order_release); });
    ASSERT_TRUE(eventually([&] { return seen.load(std::memory_order_acquire) == i + 1; }))
        << "post " << i << " did not run within 20 s on a spinning loop";
  }
  EXPECT_TRUE(l->stop_and_join());
}

// Posts timed around the end of the busy-poll time: the loop goes from spinning (nobody
// wakes it) to sleeping (the poster must wake it); no post may be lost in between.
TEST_P(BusyPollAttack, PostsAroundTheEndOfTheBusyPollTime) {
  const std::uint64_t seed = seed_from_env();
  std::printf("seed %llu (BUSY_POLL_ATTACK_SEED)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (unsigned bp : {1u, 5u, 20u, 100u, 500u}) {
    auto l = start(bp);
    SKIP_IF_NO_LOOP(l);
    std::atomic<int> seen{0};
    for (int i = 0; i < 1'500; ++i) {
      post(l->ctx(), [&seen] { seen.fetch_add(1, std::memory_order_release); });
      ASSERT_TRUE(eventually([&] { return seen.load(std::memory_order_acquire) == i + 1; }))
          << "busy_poll=" << bp << " us: post " << i << " never ran (seed " << seed << ")";
      pause_us(static_cast<unsigned>(rng() % (2 * bp + 2)));
    }
    EXPECT_TRUE(l->stop_and_join()) << "busy_poll=" << bp;
  }
}

// Many threads post at once to a spinning loop: every item runs exactly once.
TEST_P(BusyPollAttack, ManyPostersToASpinningLoop) {
  auto l = start(50);
  SKIP_IF_NO_LOOP(l);
  std::atomic<int> seen{0};
  std::vector<std::thread> posters;
  for (int t = 0; t < 4; ++t)
    posters.emplace_back([&l, &seen, t] {
      for (int i = 0; i < 5'000; ++i) {
        post(l->ctx(), [&seen] { seen.fetch_add(1, std::memory_order_relaxed); });
        if (i % 64 == t) std::this_thread::sleep_for(100us);
      }
    });
  for (auto& t : posters) t.join();
  EXPECT_TRUE(eventually([&] { return seen.load() == 20'000; })) << "ran " << seen.load() << " of 20000 posts";
  EXPECT_TRUE(l->stop_and_join());
}

// stop() from another thread at random moments around the busy-poll time: run() returns.
TEST_P(BusyPollAttack, StopAroundTheEndOfTheBusyPollTime) {
  const std::uint64_t seed = seed_from_env();
  std::printf("seed %llu (BUSY_POLL_ATTACK_SEED)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (unsigned bp : {1u, 10u, 100u, 1'000u, kForever}) {
    for (int i = 0; i < 40; ++i) {
      auto l = start(bp);
      SKIP_IF_NO_LOOP(l);
      std::atomic<bool> ran{false};
      post(l->ctx(), [&ran] { ran.store(true); });
      ASSERT_TRUE(eventually([&] { return ran.load(); }));
      pause_us(static_cast<unsigned>(rng() % (bp == kForever ? 3'000u : 2 * bp + 2)));
      ASSERT_TRUE(l->stop_and_join()) << "busy_poll=" << bp << " us, round " << i << ": run() did not return (seed "
                                      << seed << ")";
    }
  }
}

// A stop() that arrives before run() still makes it return at once with busy polling.
TEST_P(BusyPollAttack, StopBeforeRunReturnsAtOnce) {
  const backend_kind k = GetParam();
  bool started = true;
  EXPECT_TRUE(finishes_within([k, &started] {
    std::optional<io_context> c;
    try {
      c.emplace(opts(k, kForever));
    } catch (const std::system_error&) {
      started = false;
      return;
    }
    c->stop();
    c->run();
  })) << "run() after stop() did not return";
  if (!started) GTEST_SKIP() << "backend cannot start here";
}

// ---- time ----------------------------------------------------------------------------

task<void> timing_checks(stream_socket& idle) {
  for (auto d : {1ms, 5ms, 20ms}) {
    const auto t0 = steady::now();
    auto slept = co_await sleep_for(d);
    const auto took = steady::now() - t0;
    EXPECT_TRUE(slept);
    EXPECT_GE(took, d) << "a sleep of " << d.count() << " ms ended early";
    EXPECT_LT(took, d + 5s) << "a sleep of " << d.count() << " ms took " << took.count() / 1'000'000 << " ms";
  }
  {
    std::array<std::byte, 8> buf{};
    const auto t0 = steady::now();
    auto r = co_await with_timeout(idle.recv(buf), 30ms);
    const auto took = steady::now() - t0;
    EXPECT_FALSE(r);
    if (!r) {
      EXPECT_EQ(r.error(), std::errc::timed_out) << r.error().message();
    }
    EXPECT_GE(took, 30ms) << "with_timeout fired early";
    EXPECT_LT(took, 5s) << "with_timeout(recv, 30 ms) took " << took.count() / 1'000'000 << " ms";
  }
  {
    auto sleeper = [](std::chrono::milliseconds d) -> task<int> {
      (void)co_await sleep_for(d);
      co_return 1;
    };
    const auto t0 = steady::now();
    auto r = co_await with_timeout(sleeper(10s), 25ms);
    const auto took = steady::now() - t0;
    EXPECT_FALSE(r);
    EXPECT_GE(took, 25ms);
    EXPECT_LT(took, 5s) << "with_timeout(task, 25 ms) took " << took.count() / 1'000'000 << " ms";
  }
}

// Sleeps and deadlines keep their times while the loop spins and around its busy-poll time.
TEST_P(BusyPollAttack, SleepsAndDeadlinesOnTime) {
  for (unsigned bp : {1u, 1'000u, 10'000u, kForever}) {
    SCOPED_TRACE("busy_poll=" + std::to_string(bp) + " us");
    auto c = make(bp);
    if (!c) GTEST_SKIP() << "backend cannot start here";
    socket_pair p;
    sync_wait(*c, timing_checks(p.a));
  }
}

// ---- cancellation, destruction, sync_wait --------------------------------------------

task<void> recv_until_stopped(stream_socket& s, int& canceled) {
  std::array<std::byte, 8> buf{};
  auto r = co_await s.recv(buf);
  if (!r && r.error() == std::errc::operation_canceled) ++canceled;
}

task<int> cancel_while_spinning(std::vector<socket_pair>& pairs) {
  int canceled = 0;
  scope s;
  for (auto& p : pairs) s.spawn(recv_until_stopped(p.a, canceled));
  (void)co_await sleep_for(5ms);
  s.request_stop();
  co_await s.join();
  co_return canceled;
}

TEST_P(BusyPollAttack, ScopeStopCancelsWhileSpinning) {
  const backend_kind k = GetParam();
  for (unsigned bp : {1u, 100u, kForever}) {
    int canceled = -1;
    bool started = true;
    EXPECT_TRUE(finishes_within([&] {
      std::optional<io_context> c;
      try {
        c.emplace(opts(k, bp));
      } catch (const std::system_error&) {
        started = false;
        return;
      }
      std::vector<socket_pair> pairs(16);
      canceled = sync_wait(*c, cancel_while_spinning(pairs));
    })) << "busy_poll="
        << bp << ": sync_wait did not return after the scope's stop";
    if (!started) GTEST_SKIP() << "backend cannot start here";
    EXPECT_EQ(canceled, 16) << "busy_poll=" << bp;
  }
}

task<void> sleep_long(int& canceled) {
  auto r = co_await sleep_for(1h);
  if (!r && r.error() == std::errc::operation_canceled) ++canceled;
}

task<void> stop_soon(io_context& c) {
  (void)co_await sleep_for(5ms);
  c.stop();
}

// A loop with operations in flight (receives, a long sleep) is stopped and destroyed
// while it spins: every operation ends with operation_canceled and nothing hangs.
TEST_P(BusyPollAttack, DestroyWithOperationsInFlightWhileSpinning) {
  const backend_kind k = GetParam();
  for (unsigned bp : {1u, kForever}) {
    int canceled = 0;
    bool started = true;
    EXPECT_TRUE(finishes_within([&] {
      std::optional<io_context> c;
      try {
        c.emplace(opts(k, bp));
      } catch (const std::system_error&) {
        started = false;
        return;
      }
      std::vector<socket_pair> pairs(8);
      for (auto& p : pairs) c->spawn(recv_until_stopped(p.a, canceled));
      c->spawn(sleep_long(canceled));
      c->spawn(stop_soon(*c));
      c->run();
      c.reset();
    })) << "busy_poll="
        << bp << ": run() or ~io_context hung";
    if (!started) GTEST_SKIP() << "backend cannot start here";
    EXPECT_EQ(canceled, 9) << "busy_poll=" << bp;
  }
}

task<int> tiny(int i) {
  co_await yield();
  co_return i;
}

// sync_wait and run_until_idle return while busy polling would keep the loop spinning.
TEST_P(BusyPollAttack, SyncWaitAndRunUntilIdleReturn) {
  const backend_kind k = GetParam();
  bool started = true;
  int sum = 0;
  bool slept = false;
  std::atomic<int> step{0};
  EXPECT_TRUE(finishes_within([&] {
    std::optional<io_context> c;
    try {
      c.emplace(opts(k, kForever));
    } catch (const std::system_error&) {
      started = false;
      return;
    }
    for (int i = 0; i < 200; ++i) sum += sync_wait(*c, tiny(i));
    step = 1;
    c->spawn([](bool& slept) -> task<void> {
      auto r = co_await sleep_for(5ms);
      slept = static_cast<bool>(r);
    }(slept));
    c->run_until_idle();
    step = 2;
    c->run_until_idle();
    step = 3;
  })) << "hung at step "
      << step.load() << " (0: sync_wait, 1: run_until_idle with a sleep, 2: run_until_idle with nothing to do)";
  if (!started) GTEST_SKIP() << "backend cannot start here";
  EXPECT_EQ(sum, 199 * 200 / 2);
  EXPECT_TRUE(slept);
}

// ---- channels and events across loops ----------------------------------------------

task<void> receive_all(channel<int>& ch, int n, std::atomic<long>& sum, std::atomic<int>& count) {
  for (int i = 0; i < n; ++i) {
    auto v = co_await ch.receive();
    if (!v) {
      ADD_FAILURE() << "receive failed after " << i << ": " << v.error().message();
      co_return;
    }
    sum.fetch_add(*v);
    count.fetch_add(1, std::memory_order_release);
  }
}

task<void> send_all(channel<int>& ch, int n, std::uint64_t seed, unsigned max_gap_us) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n; ++i) {
    auto r = co_await ch.send(i);
    if (!r) {
      ADD_FAILURE() << "send " << i << " failed: " << r.error().message();
      co_return;
    }
    const unsigned gap = static_cast<unsigned>(rng() % (max_gap_us + 1));
    if (gap > max_gap_us / 2) (void)co_await sleep_for(std::chrono::microseconds(gap));
  }
}

// A channel between two loops, the receiver spinning or falling asleep between values,
// the sender on a loop of the same backend (ring messages between io_uring loops, the
// eventfd or futex otherwise; futex_wake on and off).
TEST_P(BusyPollAttack, ChannelBetweenLoops) {
  const std::uint64_t seed = seed_from_env();
  std::printf("seed %llu (BUSY_POLL_ATTACK_SEED)\n", static_cast<unsigned long long>(seed));
  constexpr int n = 3'000;
  for (bool futex : {false, true}) {
    for (unsigned bp : {1u, 20u, 200u, kForever}) {
      SCOPED_TRACE("busy_poll=" + std::to_string(bp) + " us, futex_wake=" + (futex ? "on" : "off"));
      auto rx = start(bp, futex);
      SKIP_IF_NO_LOOP(rx);
      auto tx = start(bp == kForever ? 0 : bp, futex);
      ASSERT_TRUE(tx);
      channel<int> ch(4);
      std::atomic<long> sum{0};
      std::atomic<int> count{0};
      post(rx->ctx(), [&] { rx->ctx().spawn(receive_all(ch, n, sum, count)); });
      post(tx->ctx(), [&] { tx->ctx().spawn(send_all(ch, n, seed, 4 * std::min(bp, 500u))); });
      EXPECT_TRUE(moves_to(count, n)) << "no value received for 20 s; received " << count.load() << " of " << n
                                      << " (seed " << seed << ")";
      EXPECT_EQ(sum.load(), static_cast<long>(n) * (n - 1) / 2);
      EXPECT_TRUE(tx->stop_and_join());
      EXPECT_TRUE(rx->stop_and_join());
      if (count.load() != n) return;  // the channel is still in use by a stuck loop
    }
  }
}

// A channel fed by a plain thread (try_send), one value at a time, timed around the
// receiver's busy-poll time.
TEST_P(BusyPollAttack, ChannelFromAThreadAroundTheBusyPollTime) {
  const std::uint64_t seed = seed_from_env();
  std::printf("seed %llu (BUSY_POLL_ATTACK_SEED)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  constexpr int n = 1'500;
  for (bool futex : {false, true}) {
    for (unsigned bp : {1u, 20u, 200u}) {
      SCOPED_TRACE("busy_poll=" + std::to_string(bp) + " us, futex_wake=" + (futex ? "on" : "off"));
      auto rx = start(bp, futex);
      SKIP_IF_NO_LOOP(rx);
      channel<int> ch(16);
      std::atomic<long> sum{0};
      std::atomic<int> count{0};
      post(rx->ctx(), [&] { rx->ctx().spawn(receive_all(ch, n, sum, count)); });
      bool lost = false;
      for (int i = 0; i < n && !lost; ++i) {
        while (!ch.try_send(i)) std::this_thread::yield();
        if (!eventually([&] { return count.load(std::memory_order_acquire) == i + 1; })) {
          ADD_FAILURE() << "value " << i << " not received within 20 s (seed " << seed << ")";
          lost = true;
        }
        pause_us(static_cast<unsigned>(rng() % (2 * bp + 2)));
      }
      EXPECT_TRUE(rx->stop_and_join());
      if (lost) return;
    }
  }
}

// Two loops playing ping-pong with auto-reset events: loop a waits on `ea` and sets
// `eb`, loop b sets `ea` and waits on `eb`. `quit` asks b to end the game early: b then
// marks its last set as the end (`ending`) and a leaves without answering, so both
// tasks return with nothing left waiting.
struct ping_pong {
  explicit ping_pong(int rounds) : n(rounds) {}
  const int n;
  event ea{event_mode::auto_reset};
  event eb{event_mode::auto_reset};
  std::atomic<int> ra{0};
  std::atomic<int> rb{0};
  std::atomic<bool> quit{false};
  std::atomic<bool> ending{false};
  std::atomic<int> finished{0};
};

task<void> ping(ping_pong& s, bool first) {
  event& mine = first ? s.eb : s.ea;
  event& theirs = first ? s.ea : s.eb;
  std::atomic<int>& rounds = first ? s.rb : s.ra;
  for (int i = 0; i < s.n; ++i) {
    if (first) {
      if (s.quit.load(std::memory_order_acquire)) {
        s.ending.store(true, std::memory_order_release);
        theirs.set();
        break;
      }
      theirs.set();
    }
    auto r = co_await mine.wait();
    if (!r) {
      ADD_FAILURE() << "event wait failed at " << i << ": " << r.error().message();
      co_return;
    }
    if (!first) {
      if (s.ending.load(std::memory_order_acquire)) break;
      theirs.set();
    }
    rounds.fetch_add(1, std::memory_order_release);
  }
  s.finished.fetch_add(1, std::memory_order_release);
}

// Plays `n` rounds of ping-pong between two loops, or as many as `budget` allows (a
// loaded machine shares its cores with the two loops, and loops that spin for ever
// pass each set along only when the scheduler runs them). Every set lands on a loop
// that is spinning or has just fallen asleep. A lost set shows as no round for 20 s.
// Returns an empty string, or what went wrong; on a stall the loops, tasks and events
// are left behind (they still use each other), after a post to each loop shows whether
// the loops still run and whether that releases the stalled wait.
std::string event_ping_pong(backend_kind k, unsigned bp, bool futex, int n, std::chrono::seconds budget,
                            bool& skipped) {
  auto a = std::make_unique<loop_thread>(opts(k, bp, futex));
  if (!a->ok()) {
    skipped = true;
    return {};
  }
  auto b = std::make_unique<loop_thread>(opts(k, bp, futex));
  if (!b->ok()) return "second loop: " + b->error();
  auto* s = new ping_pong(n);
  loop_thread* la = a.get();
  loop_thread* lb = b.get();
  post(a->ctx(), [=] { la->ctx().spawn(ping(*s, false)); });
  post(b->ctx(), [=] { lb->ctx().spawn(ping(*s, true)); });
  const auto began = steady::now();
  const bool stalled = !keeps_moving_until([&] { return s->ra.load() + s->rb.load(); },
                                           [&] { return s->finished.load(std::memory_order_acquire) == 2; },
                                           [&] {
                                             if (steady::now() - began > budget)
                                               s->quit.store(true, std::memory_order_release);
                                           });
  if (!stalled) {
    if (s->ra.load() < n)
      std::printf("busy_poll=%u us, futex_wake=%s: %d of %d rounds in the %lld s budget (a loaded machine)\n", bp,
                  futex ? "on" : "off", s->ra.load(), n, static_cast<long long>(budget.count()));
    std::string out;
    if (!a->stop_and_join()) out = "loop a did not stop";
    if (!b->stop_and_join()) out += " loop b did not stop";
    if (out.empty()) {
      delete s;
    } else {
      (void)a.release();
      (void)b.release();
    }
    return out;
  }
  std::string out = "no round for 20 s at rounds " + std::to_string(s->ra.load()) + " (loop a) and " +
                    std::to_string(s->rb.load()) + " (loop b) of " + std::to_string(n);
  const loop_metrics ma = a->ctx().metrics(), mb = b->ctx().metrics();
  out += "; loop a: wakeups " + std::to_string(ma.wakeups) + " posts " + std::to_string(ma.posts_received) +
         " asleep_ns " + std::to_string(ma.asleep_ns) + "; loop b: wakeups " + std::to_string(mb.wakeups) + " posts " +
         std::to_string(mb.posts_received) + " asleep_ns " + std::to_string(mb.asleep_ns);
  out += std::string("; events set: a ") + (s->ea.is_set() ? "yes" : "no") + ", b " + (s->eb.is_set() ? "yes" : "no");
  const std::uint64_t ia = ma.iterations, ib = mb.iterations;
  std::this_thread::sleep_for(100ms);
  out += "; iterations in 100 ms: a " + std::to_string(a->ctx().metrics().iterations - ia) + ", b " +
         std::to_string(b->ctx().metrics().iterations - ib);
  const int before_a = s->ra.load(), before_b = s->rb.load();
  auto* pa = new std::atomic<bool>(false);
  auto* pb = new std::atomic<bool>(false);
  post(a->ctx(), [pa] { pa->store(true); });
  post(b->ctx(), [pb] { pb->store(true); });
  const bool posts_ran = eventually([&] { return pa->load() && pb->load(); }, 5s);
  std::this_thread::sleep_for(100ms);
  out += std::string("; a post to each loop then ") + (posts_ran ? "ran" : "did not run") + ", rounds moved to " +
         std::to_string(s->ra.load()) + " and " + std::to_string(s->rb.load()) +
         (s->ra.load() != before_a || s->rb.load() != before_b ? " (the post released the stalled wait)" : "");
  (void)a.release();
  (void)b.release();
  return out;
}

TEST_P(BusyPollAttack, EventPingPongBetweenLoops) {
  for (bool futex : {false, true}) {
    for (unsigned bp : {1u, 10u, 100u, kForever}) {
      bool skipped = false;
      const std::string problem = event_ping_pong(GetParam(), bp, futex, 2'000, 3s, skipped);
      if (skipped) GTEST_SKIP() << "backend cannot start here";
      ASSERT_EQ(problem, "") << "busy_poll=" << bp << " us, futex_wake=" << (futex ? "on" : "off");
    }
  }
}

// The same between two loops that spin all the time (nobody is ever asleep, so every
// set must be found by the spinning loop itself), for many rounds.
TEST_P(BusyPollAttack, EventPingPongBetweenAlwaysSpinningLoops) {
  for (bool futex : {false, true}) {
    bool skipped = false;
    const std::string problem = event_ping_pong(GetParam(), kForever, futex, 30'000, 4s, skipped);
    if (skipped) GTEST_SKIP() << "backend cannot start here";
    ASSERT_EQ(problem, "") << "busy_poll=UINT_MAX us, futex_wake=" << (futex ? "on" : "off");
  }
}

// The same with busy polling off, for comparison: the loops sleep between sets.
TEST_P(BusyPollAttack, EventPingPongBetweenLoopsWithoutBusyPolling) {
  for (bool futex : {false, true}) {
    bool skipped = false;
    const std::string problem = event_ping_pong(GetParam(), 0, futex, 30'000, 4s, skipped);
    if (skipped) GTEST_SKIP() << "backend cannot start here";
    ASSERT_EQ(problem, "") << "busy_poll=0, futex_wake=" << (futex ? "on" : "off");
  }
}

// An event set by a plain thread while its waiter spins or falls asleep.
TEST_P(BusyPollAttack, EventSetFromAThreadAroundTheBusyPollTime) {
  const std::uint64_t seed = seed_from_env();
  std::printf("seed %llu (BUSY_POLL_ATTACK_SEED)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  constexpr int n = 1'500;
  for (bool futex : {false, true}) {
    for (unsigned bp : {1u, 20u, 200u}) {
      SCOPED_TRACE("busy_poll=" + std::to_string(bp) + " us, futex_wake=" + (futex ? "on" : "off"));
      auto l = start(bp, futex);
      SKIP_IF_NO_LOOP(l);
      event ev(event_mode::auto_reset);
      std::atomic<int> rounds{0};
      post(l->ctx(), [&] {
        l->ctx().spawn([](event& ev, int n, std::atomic<int>& rounds) -> task<void> {
          for (int i = 0; i < n; ++i) {
            auto r = co_await ev.wait();
            if (!r) co_return;
            rounds.fetch_add(1, std::memory_order_release);
          }
        }(ev, n, rounds));
      });
      bool lost = false;
      for (int i = 0; i < n && !lost; ++i) {
        ev.set();
        if (!eventually([&] { return rounds.load(std::memory_order_acquire) == i + 1; })) {
          ADD_FAILURE() << "set " << i << " did not release the waiter within 20 s (seed " << seed << ")";
          lost = true;
        }
        pause_us(static_cast<unsigned>(rng() % (2 * bp + 2)));
      }
      EXPECT_TRUE(l->stop_and_join());
      if (lost) return;
    }
  }
}

// ---- runtime (thread per core) -------------------------------------------------------

task<int> on_other_loop(int i) {
  co_await yield();
  co_return i;
}

task<void> bounce(runtime& rt, unsigned index, std::atomic<int>& done) {
  int sum = 0;
  for (int i = 0; i < 300; ++i) {
    sum += co_await spawn_on(rt.context((index + 1) % rt.size()), on_other_loop(i));
    if (i % 50 == 0) (void)co_await sleep_for(std::chrono::microseconds(i));
  }
  EXPECT_EQ(sum, 299 * 300 / 2);
  done.fetch_add(1);
}

TEST_P(BusyPollAttack, RuntimeSpawnOnBetweenSpinningLoops) {
  for (unsigned bp : {1u, 50u, kForever}) {
    SCOPED_TRACE("busy_poll=" + std::to_string(bp) + " us");
    std::unique_ptr<runtime> rt;
    try {
      rt = std::make_unique<runtime>(runtime_options{.threads = 2, .context = opts(GetParam(), bp)});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend cannot start here: " << e.what();
    }
    std::atomic<int> done{0};
    runtime* r = rt.get();
    EXPECT_TRUE(finishes_within([r, &done] {
      r->run_on_each([r, &done](io_context&, unsigned i) { return bounce(*r, i, done); });
    })) << "run_on_each did not return";
    EXPECT_EQ(done.load(), 2);
    if (done.load() != 2) {
      (void)rt.release();  // its loops are stuck: leave them
      return;
    }
    EXPECT_TRUE(finishes_within([r] { r->stop(); })) << "runtime::stop() did not return";
    rt.reset();
  }
}

TEST_P(BusyPollAttack, RuntimeLoopsSleepWhenIdle) {
  std::unique_ptr<runtime> rt;
  try {
    rt = std::make_unique<runtime>(runtime_options{.threads = 2, .context = opts(GetParam(), 2'000)});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "backend cannot start here: " << e.what();
  }
  rt->run_on_each([](io_context&, unsigned) -> task<void> { (void)co_await sleep_for(1ms); });
  std::this_thread::sleep_for(100ms);
  const std::uint64_t w0 = rt->metrics().kernel_waits;
  std::this_thread::sleep_for(300ms);
  const std::uint64_t w = rt->metrics().kernel_waits - w0;
  EXPECT_LE(w, 100u) << "two idle loops made " << w << " trips to the kernel in 300 ms";
  rt->stop();
}

RINGIO_ALL_BACKENDS(BusyPollAttack);

// ---- the simulated backend -----------------------------------------------------------
// A run that does not end leaves its thread behind (spinning), so each probe stops at
// the first one.

io_context_options sim_opts(unsigned bp) {
  return io_context_options{.backend = backend_kind::sim, .quiet = true, .busy_poll = bp};
}

class BusyPollAttackSim : public ::testing::TestWithParam<unsigned> {};

// Virtual time jumps over ten 1 s sleeps with busy polling on (the loop must not spin in
// real time waiting for virtual time to move).
TEST_P(BusyPollAttackSim, VirtualTimeJumpsOverSleeps) {
  const unsigned bp = GetParam();
  struct out {
    std::chrono::nanoseconds elapsed{};
    bool ok = false;
  };
  auto* o = new out;  // left behind with a run that does not end
  ASSERT_TRUE(finishes_within([o, bp] {
    sim::world w(1);
    {
      io_context ctx(sim_opts(bp));
      o->ok = sync_wait(ctx, []() -> task<bool> {
        for (int i = 0; i < 10; ++i) {
          auto r = co_await sleep_for(1s);
          if (!r) co_return false;
        }
        co_return true;
      }());
    }
    o->elapsed = w.elapsed();
  })) << "busy_poll="
      << bp << " us: ten 1 s sleeps in a simulated world did not finish within 20 s of real time";
  EXPECT_TRUE(o->ok);
  EXPECT_GE(o->elapsed, 10s);
  EXPECT_LT(o->elapsed, 11s) << "virtual time ran to " << o->elapsed.count() << " ns";
  delete o;
}

// A simulated loop with busy polling and no timers: sync_wait of a task that only yields.
TEST_P(BusyPollAttackSim, SyncWaitWithoutTimersReturns) {
  const unsigned bp = GetParam();
  auto* sum = new int(0);
  ASSERT_TRUE(finishes_within([sum, bp] {
    sim::world w(1);
    io_context ctx(sim_opts(bp));
    for (int i = 0; i < 50; ++i) *sum += sync_wait(ctx, tiny(i));
  })) << "busy_poll="
      << bp << " us: sync_wait of yielding tasks did not return";
  EXPECT_EQ(*sum, 49 * 50 / 2);
  delete sum;
}

struct sim_run {
  std::uint64_t hash = 0;
  std::chrono::nanoseconds elapsed{};
  std::string echoed;
};

task<std::string> sim_echo_program() {
  auto l = stream_listener::bind(socket_address::loopback(0));
  if (!l) co_return "bind failed";
  auto [c, a] = co_await when_all(stream_socket::connect(*l->local_address()), with_timeout(l->accept(), 10s));
  if (!c || !a) co_return "connect/accept failed";
  std::string got;
  for (int i = 0; i < 20; ++i) {
    std::array<std::byte, 1> out{static_cast<std::byte>('a' + i)};
    auto s = co_await c->send(out);
    if (!s) co_return "send failed";
    std::array<std::byte, 1> in{};
    auto r = co_await with_timeout(a->recv(in), 10s);
    if (!r || *r != 1) co_return "recv failed";
    got.push_back(static_cast<char>(in[0]));
    (void)co_await sleep_for(std::chrono::milliseconds(i));
  }
  co_return got;
}

// One simulated TCP exchange in a world of its own, on a thread of its own; nullopt when
// it does not end within 20 s.
std::optional<sim_run> run_sim(unsigned bp, std::uint64_t seed) {
  auto* out = new sim_run;
  if (!finishes_within([out, bp, seed] {
        sim::world w(seed);
        {
          io_context ctx(sim_opts(bp));
          out->echoed = sync_wait(ctx, sim_echo_program());
        }
        out->hash = w.trace_hash();
        out->elapsed = w.elapsed();
      }))
    return std::nullopt;
  sim_run r = *out;
  delete out;
  return r;
}

// A simulated TCP exchange with busy polling completes, the same seed gives the same
// trace twice, and virtual time is what it is without busy polling.
TEST_P(BusyPollAttackSim, SimulatedExchangeStaysDeterministic) {
  const unsigned bp = GetParam();
  std::string want;
  for (char c = 'a'; c < 'a' + 20; ++c) want.push_back(c);
  for (std::uint64_t seed : {1u, 7u}) {
    auto off = run_sim(0, seed);
    ASSERT_TRUE(off) << "seed " << seed << ": the exchange without busy polling did not finish";
    ASSERT_EQ(off->echoed, want);
    auto on1 = run_sim(bp, seed);
    ASSERT_TRUE(on1) << "seed " << seed << ", busy_poll=" << bp
                     << " us: a simulated exchange did not finish within 20 s of real time (without busy polling: "
                     << off->elapsed.count() << " ns of virtual time)";
    auto on2 = run_sim(bp, seed);
    ASSERT_TRUE(on2);
    EXPECT_EQ(on1->echoed, want) << "seed " << seed;
    EXPECT_EQ(on1->hash, on2->hash) << "seed " << seed << ": the same seed and program gave two traces";
    EXPECT_EQ(on1->elapsed, off->elapsed) << "seed " << seed << ": busy polling changed virtual time";
  }
}

// run_until_idle and a stop() from the loop itself return in a simulated world.
TEST_P(BusyPollAttackSim, RunUntilIdleAndStopReturn) {
  const unsigned bp = GetParam();
  auto* step = new std::atomic<int>(0);
  ASSERT_TRUE(finishes_within([step, bp] {
    sim::world w(3);
    io_context ctx(sim_opts(bp));
    // Ignored by the sim backend (its clock moves when the loop would sleep).
    EXPECT_EQ(ctx.describe().find("busy poll"), std::string::npos) << ctx.describe();
    bool slept = false;
    ctx.spawn([](bool& slept) -> task<void> {
      auto r = co_await sleep_for(2s);
      slept = static_cast<bool>(r);
    }(slept));
    ctx.run_until_idle();
    EXPECT_TRUE(slept) << "run_until_idle returned before the 2 s sleep ended";
    EXPECT_GE(w.elapsed(), 2s);
    step->store(1);
    ctx.spawn(stop_soon(ctx));
    ctx.run();
    step->store(2);
  })) << "busy_poll="
      << bp << " us: a simulated loop hung in " << (step->load() == 0 ? "run_until_idle()" : "run() after stop()");
  delete step;
}

INSTANTIATE_TEST_SUITE_P(, BusyPollAttackSim, ::testing::Values(1u, 50u, kForever),
                         [](const ::testing::TestParamInfo<unsigned>& i) { return "us" + std::to_string(i.param); });

}  // namespace
