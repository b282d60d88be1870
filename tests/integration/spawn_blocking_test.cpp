// SPDX-License-Identifier: Apache-2.0
// spawn_blocking: results and exceptions come back on the loop; a stop before the
// start keeps the function from running, a stop after it drops the value; bounded
// queues refuse; contexts and pools destroyed with work queued and running free
// everything; a seeded random run of stops and shutdowns keeps the invariants.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class SpawnBlocking : public backend_test {
 protected:
  bool sim() const { return GetParam() == backend_kind::sim; }
};

// Counts the copies alive of the objects a function captures: 0 means every job freed.
std::atomic<int> captured_alive{0};
struct capture_probe {
  capture_probe() noexcept { captured_alive.fetch_add(1); }
  capture_probe(const capture_probe&) noexcept { captured_alive.fetch_add(1); }
  capture_probe(capture_probe&&) noexcept { captured_alive.fetch_add(1); }
  capture_probe& operator=(const capture_probe&) = delete;
  ~capture_probe() { captured_alive.fetch_sub(1); }
};

// Waits (on the test thread, without a loop) until `pred` holds; generous limit.
template <class Pred>
bool eventually(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Runs the loop of the current task until `pred` holds.
template <class Pred>
task<bool> loop_until(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) co_return false;
    (void)co_await sleep_for(1ms);
  }
  co_return true;
}

TEST_P(SpawnBlocking, ValuesVoidAndExceptionsComeBackOnTheLoop) {
  const auto loop_thread = std::this_thread::get_id();
  run([](std::thread::id loop_thread, bool sim) -> task<void> {
    auto fn = [] { return std::this_thread::get_id(); };
    auto ran_on = co_await spawn_blocking(fn);
    EXPECT_TRUE(ran_on.has_value());
    if (sim) {
      EXPECT_EQ(*ran_on, loop_thread);  // sim: inline on the loop
    } else {
      EXPECT_NE(*ran_on, loop_thread);
    }
    EXPECT_EQ(std::this_thread::get_id(), loop_thread);  // resumed on the loop

    int side = 0;
    auto set = [&side] { side = 7; };
    result<void> v = co_await spawn_blocking(set);
    EXPECT_TRUE(v.has_value());
    EXPECT_EQ(side, 7);

    auto moved = [] { return std::make_unique<int>(42); };
    auto p = co_await spawn_blocking(moved);
    EXPECT_TRUE(p.has_value() && **p == 42);

    auto thrower = []() -> int { throw std::runtime_error("boom"); };
    bool caught = false;
    try {
      (void)co_await spawn_blocking(thrower);
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()) == "boom";
    }
    EXPECT_TRUE(caught);
  }(loop_thread, sim()));
}

TEST_P(SpawnBlocking, StopBeforeTheStartNeverRunsTheFunction) {
  run([]() -> task<void> {
    std::atomic<bool> ran{false};
    std::stop_source stop;
    stop.request_stop();
    auto fn = [&ran] { ran = true; };
    auto r = co_await spawn_blocking(fn).with_stop(stop.get_token());
    EXPECT_EQ(r.error(), std::errc::operation_canceled);
    // Stopped after the start, before a thread took it (sim: before the loop ran it).
    std::stop_source later;
    auto fn2 = [&ran] { ran = true; };
    auto op = spawn_blocking(fn2).with_stop(later.get_token());
    later.request_stop();
    r = co_await std::move(op);
    EXPECT_EQ(r.error(), std::errc::operation_canceled);
    (void)co_await sleep_for(20ms);
    EXPECT_FALSE(ran.load());
  }());
}

TEST_P(SpawnBlocking, QueuedWorkStoppedBeforeItStartsNeverRuns) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline: nothing waits in a pool queue";
  blocking_pool pool({.threads = 1, .queue_limit = 4});
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  run([](blocking_pool& pool, std::atomic<bool>& release, std::atomic<int>& ran) -> task<void> {
    auto blocker = [&release] {
      while (!release) std::this_thread::sleep_for(1ms);
      return 1;
    };
    scope s;
    std::optional<result<int>> first;
    s.spawn([](blocking_pool& pool, decltype(blocker) b, std::optional<result<int>>& out) -> task<void> {
      out = co_await spawn_blocking(pool, b);
    }(pool, blocker, first));
    EXPECT_TRUE(co_await loop_until([&] { return pool.running() == 1; }));
    // The one thread is busy: this one waits in the queue until its deadline.
    auto queued = [&ran] { return ++ran; };
    auto r = co_await with_timeout(spawn_blocking(pool, queued), 20ms);
    EXPECT_EQ(r.error(), std::errc::timed_out);
    EXPECT_EQ(pool.queued(), 0u);  // withdrawn from the queue
    release = true;
    co_await s.join();
    EXPECT_TRUE(first && first->has_value() && **first == 1);
  }(pool, release, ran));
  EXPECT_EQ(ran.load(), 0);
}

TEST_P(SpawnBlocking, StopWhileRunningDropsTheValueAndTheFunctionCompletes) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline: no stop can arrive while it runs";
  blocking_pool pool({.threads = 2, .queue_limit = 4});
  std::atomic<bool> release{false};
  std::atomic<bool> finished{false};
  run([](blocking_pool& pool, std::atomic<bool>& release, std::atomic<bool>& finished) -> task<void> {
    std::stop_source stop;
    capture_probe probe;
    auto slow = [&release, &finished, probe] {
      while (!release) std::this_thread::sleep_for(1ms);
      finished = true;
      return std::make_unique<std::vector<int>>(1000, 1);  // dropped unread: ASan sees a leak if lost
    };
    const int held_here = captured_alive.load();  // `probe` and the copy in `slow`
    scope s;
    s.spawn([](blocking_pool& pool, std::stop_source& stop) -> task<void> {
      EXPECT_TRUE(co_await loop_until([&] { return pool.running() == 1; }));
      stop.request_stop();
    }(pool, stop));
    auto r = co_await spawn_blocking(pool, slow).with_stop(stop.get_token());
    EXPECT_EQ(r.error(), std::errc::operation_canceled);
    EXPECT_FALSE(finished.load());  // the awaiter did not wait for the function
    co_await s.join();
    release = true;
    // The function ends on its thread; its job comes back and is freed by the loop.
    EXPECT_TRUE(co_await loop_until([&] { return finished.load() && pool.running() == 0; }));
    EXPECT_TRUE(co_await loop_until([&] { return captured_alive.load() == held_here; }));
  }(pool, release, finished));
  EXPECT_EQ(captured_alive.load(), 0);
}

TEST_P(SpawnBlocking, FullQueueRefusesAndEverythingAcceptedCompletes) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline: the pool's bounds do not apply";
  blocking_pool pool({.threads = 2, .queue_limit = 3});
  std::atomic<bool> release{false};
  run([](blocking_pool& pool, std::atomic<bool>& release) -> task<void> {
    std::vector<std::optional<result<int>>> results(5);
    scope s;
    auto start = [&](int i) {
      s.spawn(
          [](blocking_pool& pool, std::atomic<bool>& release, int i, std::optional<result<int>>& out) -> task<void> {
            auto fn = [&release, i] {
              while (!release) std::this_thread::sleep_for(1ms);
              return i * 10;
            };
            out = co_await spawn_blocking(pool, fn);
          }(pool, release, i, results[static_cast<std::size_t>(i)]));
    };
    start(0);
    start(1);
    EXPECT_TRUE(co_await loop_until([&] { return pool.running() == 2; }));
    for (int i = 2; i < 5; ++i) start(i);
    EXPECT_TRUE(co_await loop_until([&] { return pool.queued() == 3; }));
    auto extra = [] { return -1; };
    auto refused = co_await spawn_blocking(pool, extra);
    EXPECT_EQ(refused.error(), errc::queue_full);
    EXPECT_EQ(pool.threads(), 2u);
    release = true;
    co_await s.join();
    for (int i = 0; i < 5; ++i) {
      const auto& r = results[static_cast<std::size_t>(i)];
      EXPECT_TRUE(r && r->has_value() && **r == i * 10) << i;
    }
  }(pool, release));
}

TEST_P(SpawnBlocking, ManyConcurrentCallsBeyondThePoolSizeAllAnswerCorrectly) {
  blocking_pool pool({.threads = 3, .queue_limit = 1000});
  constexpr int calls = 500;
  const long sum = run([](blocking_pool& pool) -> task<long> {
    std::vector<long> got(calls, -1);
    scope s;
    for (int i = 0; i < calls; ++i)
      s.spawn([](blocking_pool& pool, int i, long& out) -> task<void> {
        auto fn = [i] { return static_cast<long>(i) * i; };
        auto r = co_await spawn_blocking(pool, fn);
        out = r ? *r : -1;
      }(pool, i, got[static_cast<std::size_t>(i)]));
    co_await s.join();
    long total = 0;
    for (int i = 0; i < calls; ++i) {
      EXPECT_EQ(got[static_cast<std::size_t>(i)], static_cast<long>(i) * i) << i;
      total += got[static_cast<std::size_t>(i)];
    }
    co_return total;
  }(pool));
  EXPECT_EQ(sum, static_cast<long>(calls - 1) * calls * (2 * calls - 1) / 6);
  EXPECT_LE(pool.threads(), 3u);
}

// Shared by the destruction tests: one running function (until `release`), others queued.
struct destruction_probe {
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::atomic<int> resumed{0};
};

task<void> await_blocking(blocking_pool* pool, destruction_probe& p) {
  capture_probe probe;
  auto fn = [&p, probe] {
    p.started.fetch_add(1);
    while (!p.release) std::this_thread::sleep_for(1ms);
    p.finished.fetch_add(1);
    return std::make_unique<int>(1);
  };
  auto r = pool != nullptr ? co_await spawn_blocking(*pool, fn) : co_await spawn_blocking(fn);
  EXPECT_FALSE(r.has_value());  // the context's shutdown cancels it
  p.resumed.fetch_add(1);
}

TEST_P(SpawnBlocking, DestroyingTheContextWithWorkQueuedAndRunningOnASharedPool) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline: nothing is queued or running at shutdown";
  destruction_probe p;
  {
    blocking_pool pool({.threads = 1, .queue_limit = 8});
    {
      io_context ctx({.backend = GetParam(), .quiet = true});
      for (int i = 0; i < 4; ++i) ctx.spawn(await_blocking(&pool, p));
      sync_wait(ctx, [](blocking_pool& pool) -> task<void> {
        EXPECT_TRUE(co_await loop_until([&] { return pool.running() == 1 && pool.queued() == 3; }));
      }(pool));
    }  // shutdown: the 4 awaiters resume with operation_canceled; 3 jobs leave the queue
    EXPECT_EQ(p.resumed.load(), 4);
    EXPECT_EQ(pool.queued(), 0u);
    p.release = true;
    EXPECT_TRUE(eventually([&] { return pool.running() == 0; }));
  }  // the running job found its loop gone and freed itself on the pool thread
  EXPECT_EQ(p.started.load(), 1);
  EXPECT_EQ(p.finished.load(), 1);
  EXPECT_EQ(captured_alive.load(), 0);
}

TEST_P(SpawnBlocking, DestroyingTheContextWaitsForItsDefaultPoolsRunningWork) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline: nothing is queued or running at shutdown";
  destruction_probe p;
  std::thread releaser;
  {
    io_context ctx({.backend = GetParam(), .quiet = true, .blocking = {.threads = 2, .queue_limit = 8}});
    for (int i = 0; i < 5; ++i) ctx.spawn(await_blocking(nullptr, p));
    sync_wait(ctx, [](destruction_probe& p) -> task<void> {
      EXPECT_TRUE(co_await loop_until([&] { return p.started.load() == 2; }));
    }(p));
    releaser = std::thread([&p] {
      std::this_thread::sleep_for(20ms);
      p.release = true;
    });
  }  // waits for the two running functions; the three queued never run
  releaser.join();
  EXPECT_EQ(p.resumed.load(), 5);
  EXPECT_EQ(p.started.load(), 2);
  EXPECT_EQ(p.finished.load(), 2);
  EXPECT_EQ(captured_alive.load(), 0);
}

TEST_P(SpawnBlocking, DestroyingThePoolCancelsItsQueue) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline: the pool is not used";
  destruction_probe p;
  io_context ctx({.backend = GetParam(), .quiet = true});
  auto pool = std::make_unique<blocking_pool>(blocking_pool_options{.threads = 1, .queue_limit = 8});
  std::vector<std::optional<result<int>>> results(3);
  sync_wait(ctx,
            [](std::unique_ptr<blocking_pool>& pool, destruction_probe& p,
               std::vector<std::optional<result<int>>>& results) -> task<void> {
              scope s;
              for (auto& out : results)
                s.spawn([](blocking_pool& pool, destruction_probe& p, std::optional<result<int>>& out) -> task<void> {
                  auto fn = [&p] {
                    p.started.fetch_add(1);
                    while (!p.release) std::this_thread::sleep_for(1ms);
                    return 5;
                  };
                  out = co_await spawn_blocking(pool, fn);
                }(*pool, p, out));
              EXPECT_TRUE(co_await loop_until([&] { return pool->running() == 1 && pool->queued() == 2; }));
              std::thread destroyer([&pool] { pool.reset(); });  // waits for the running one
              // The queued two come back cancelled while the destructor waits for the third.
              EXPECT_TRUE(co_await loop_until([&] {
                int n = 0;
                for (auto& r : results) n += r && !r->has_value() ? 1 : 0;
                return n == 2;
              }));
              p.release = true;
              destroyer.join();
              co_await s.join();
            }(pool, p, results));
  EXPECT_EQ(p.started.load(), 1);
  int values = 0, cancelled = 0;
  for (auto& r : results) {
    ASSERT_TRUE(r.has_value());
    if (r->has_value()) ++values;
    else if (r->error() == std::errc::operation_canceled) ++cancelled;
  }
  EXPECT_EQ(values, 1);
  EXPECT_EQ(cancelled, 2);
}

// Random stops (before and after the start) and context shutdowns with work queued and
// running; checked: every function that started finished, none whose awaiter was
// stopped before awaiting ever ran, every value that came back is right, every job is
// freed.
TEST_P(SpawnBlocking, SeededRandomStopsAndShutdownsKeepTheInvariants) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  struct job_record {
    std::atomic<bool> started{false};
    std::atomic<bool> finished{false};
    bool stopped_before = false;
    bool resumed = false;
    std::optional<result<int>> outcome;
  };
  blocking_pool pool({.threads = 3, .queue_limit = 6});
  std::vector<std::unique_ptr<job_record>> all;
  for (int round = 0; round < 8; ++round) {
    io_context ctx({.backend = GetParam(), .quiet = true});
    const int jobs = 12 + static_cast<int>(rng() % 12);
    std::vector<job_record*> mine;
    for (int i = 0; i < jobs; ++i) {
      all.push_back(std::make_unique<job_record>());
      job_record* rec = all.back().get();
      mine.push_back(rec);
      rec->stopped_before = rng() % 5 == 0;
      const auto work = std::chrono::microseconds(rng() % 3000);
      const auto stop_after = std::chrono::microseconds(rng() % 6000);
      const bool stop_later = rng() % 3 == 0;
      ctx.spawn([](blocking_pool& pool, job_record& rec, int value, std::chrono::microseconds work, bool stop_later,
                   std::chrono::microseconds stop_after) -> task<void> {
        std::stop_source stop;
        if (rec.stopped_before) stop.request_stop();
        scope s;
        if (stop_later)
          s.spawn([](std::stop_source& stop, std::chrono::microseconds d) -> task<void> {
            (void)co_await sleep_for(d);
            stop.request_stop();
          }(stop, stop_after));
        capture_probe probe;
        auto fn = [&rec, value, work, probe] {
          rec.started = true;
          std::this_thread::sleep_for(work);
          rec.finished = true;
          return value;
        };
        auto r = co_await spawn_blocking(pool, fn).with_stop(stop.get_token());
        rec.outcome = std::move(r);
        rec.resumed = true;
        co_await s.join();
      }(pool, *rec, i, work, stop_later, stop_after));
    }
    // Either let every awaiter finish, or shut the context down after a random while.
    const bool shut_down_early = rng() % 2 == 0;
    const auto run_for = std::chrono::microseconds(rng() % 4000);
    if (shut_down_early) {
      sync_wait(ctx, [](std::chrono::microseconds d) -> task<void> { (void)co_await sleep_for(d); }(run_for));
    } else {
      ctx.run_until_idle();
      for (job_record* rec : mine) EXPECT_TRUE(rec->resumed);
    }
  }  // each context destroyed here, some with work queued and running
  EXPECT_TRUE(eventually([&] { return pool.running() == 0 && pool.queued() == 0; }));
  EXPECT_TRUE(eventually([] { return captured_alive.load() == 0; })) << "seed " << seed;
  int ran = 0;
  for (const auto& rec : all) {
    EXPECT_EQ(rec->started.load(), rec->finished.load()) << "seed " << seed;
    if (rec->stopped_before) {
      EXPECT_FALSE(rec->started.load()) << "seed " << seed;
    }
    if (rec->outcome && rec->outcome->has_value()) {
      EXPECT_TRUE(rec->finished.load()) << "seed " << seed;
    }
    ran += rec->started.load() ? 1 : 0;
  }
  std::printf("seed %llu: %zu jobs, %d ran\n", static_cast<unsigned long long>(seed), all.size(), ran);
}

RINGIO_ALL_BACKENDS_AND_SIM(SpawnBlocking);

}  // namespace
