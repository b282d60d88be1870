// SPDX-License-Identifier: Apache-2.0
// mutex, semaphore, wait_group, barrier and event: FIFO hand-off, exclusion, waits
// cancelled before they start, while queued and racing a hand-off, timeouts, and a
// set() from another thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class Sync : public backend_test {};

constexpr int barrier_size = 4, barrier_phases = 3;

TEST_P(Sync, MutexHandsTheLockOverInFifoOrderAndExcludes) {
  auto order = run([]() -> task<std::vector<int>> {
    mutex m;
    std::vector<int> order;
    int inside = 0;
    auto worker = [](mutex& m, std::vector<int>& order, int& inside, int id) -> task<void> {
      auto g = co_await m.lock();
      EXPECT_TRUE(g);
      ++inside;
      EXPECT_EQ(inside, 1);
      order.push_back(id);
      co_await yield();  // holds it across suspensions
      auto s = co_await sleep_for(1ms);
      EXPECT_TRUE(s);
      --inside;
    };
    scope sc;
    for (int i = 0; i < 6; ++i) sc.spawn(worker(m, order, inside, i));
    co_await sc.join();
    EXPECT_FALSE(m.is_locked());
    co_return order;
  }());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST_P(Sync, MutexTryLockAndGuards) {
  run([]() -> task<void> {
    mutex m;
    EXPECT_TRUE(m.try_lock());
    EXPECT_FALSE(m.try_lock());
    m.unlock();
    {
      auto g = co_await m.lock();
      EXPECT_TRUE(g && g->owns_lock());
      EXPECT_FALSE(m.try_lock());
      scoped_lock moved = std::move(*g);
      EXPECT_TRUE(m.is_locked());
    }
    EXPECT_FALSE(m.is_locked());
  }());
}

TEST_P(Sync, MutexWaiterStoppedWhileQueuedLeavesTheQueue) {
  run([]() -> task<void> {
    mutex m;
    auto held = co_await m.lock();
    EXPECT_TRUE(held);
    std::stop_source stop_b;
    bool c_got = false;
    result<scoped_lock> b_result = unexpected(std::errc::invalid_argument);
    auto b = [](mutex& m, std::stop_token t, result<scoped_lock>& out) -> task<void> {
      out = co_await m.lock().with_stop(t);
    };
    auto c = [](mutex& m, bool& got) -> task<void> {
      auto g = co_await m.lock();
      got = g.has_value();
    };
    scope sc;
    sc.spawn(b(m, stop_b.get_token(), b_result));
    sc.spawn(c(m, c_got));
    stop_b.request_stop();
    co_await yield();
    EXPECT_FALSE(b_result);
    EXPECT_EQ(b_result.error(), std::errc::operation_canceled);
    held->unlock();  // goes to c, not to the cancelled b
    co_await sc.join();
    EXPECT_TRUE(c_got);
    EXPECT_FALSE(m.is_locked());
  }());
}

TEST_P(Sync, StopBeforeStartTakesNothingEvenWhenFree) {
  run([]() -> task<void> {
    mutex m;
    semaphore s(1);
    std::stop_source stop;
    stop.request_stop();
    auto l = co_await m.lock().with_stop(stop.get_token());
    EXPECT_FALSE(l);
    EXPECT_FALSE(m.is_locked());
    auto a = co_await s.acquire().with_stop(stop.get_token());
    EXPECT_FALSE(a);
    EXPECT_EQ(s.available(), 1u);
  }());
}

// unlock() hands the lock to b; b's stop arrives before b runs again: b reports the
// lock as acquired, and releasing it leaves the mutex free.
TEST_P(Sync, MutexHandOffWinsOverALaterStop) {
  run([]() -> task<void> {
    mutex m;
    auto held = co_await m.lock();
    std::stop_source stop_b;
    bool b_acquired = false;
    auto b = [](mutex& m, std::stop_token t, bool& acquired) -> task<void> {
      auto g = co_await m.lock().with_stop(t);
      acquired = g.has_value();
    };
    scope sc;
    sc.spawn(b(m, stop_b.get_token(), b_acquired));
    held->unlock();
    stop_b.request_stop();
    co_await sc.join();
    EXPECT_TRUE(b_acquired);
    EXPECT_FALSE(m.is_locked());
  }());
}

// The stop comes first, then unlock() in the same turn: b is cancelled and the lock
// is free (not leaked to the cancelled waiter).
TEST_P(Sync, MutexStopBeforeHandOffPassesTheLockOn) {
  run([]() -> task<void> {
    mutex m;
    auto held = co_await m.lock();
    std::stop_source stop_b;
    bool b_acquired = true, c_acquired = false;
    auto waiter = [](mutex& m, std::stop_token t, bool& acquired) -> task<void> {
      auto g = co_await m.lock().with_stop(t);
      acquired = g.has_value();
    };
    scope sc;
    sc.spawn(waiter(m, stop_b.get_token(), b_acquired));
    sc.spawn(waiter(m, std::stop_token{}, c_acquired));
    stop_b.request_stop();
    held->unlock();
    co_await sc.join();
    EXPECT_FALSE(b_acquired);
    EXPECT_TRUE(c_acquired);
    EXPECT_FALSE(m.is_locked());
  }());
}

TEST_P(Sync, LockAndAcquireTimeOut) {
  run([]() -> task<void> {
    mutex m;
    semaphore s(0);
    auto held = co_await m.lock();
    auto t0 = ringio::now();
    auto l = co_await with_timeout(m.lock(), 20ms);
    EXPECT_GE(ringio::now() - t0, 15ms);
    EXPECT_FALSE(l);
    EXPECT_EQ(l.error(), std::errc::timed_out);
    auto a = co_await with_timeout(s.acquire(), 5ms);
    EXPECT_FALSE(a);
    EXPECT_EQ(a.error(), std::errc::timed_out);
    held->unlock();
    EXPECT_FALSE(m.is_locked());  // nobody left in the queue
    s.release();
    EXPECT_EQ(s.available(), 1u);
  }());
}

TEST_P(Sync, SemaphoreBoundsConcurrencyAndServesInOrder) {
  run([]() -> task<void> {
    semaphore s(2);
    int inside = 0, most = 0;
    std::vector<int> order;
    auto worker = [](semaphore& s, int& inside, int& most, std::vector<int>& order, int id) -> task<void> {
      auto a = co_await s.acquire();
      EXPECT_TRUE(a);
      order.push_back(id);
      most = std::max(most, ++inside);
      auto z = co_await sleep_for(2ms);
      EXPECT_TRUE(z);
      --inside;
      s.release();
    };
    scope sc;
    for (int i = 0; i < 7; ++i) sc.spawn(worker(s, inside, most, order, i));
    co_await sc.join();
    EXPECT_EQ(most, 2);
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(s.available(), 2u);
    EXPECT_TRUE(s.try_acquire());
    EXPECT_TRUE(s.try_acquire());
    EXPECT_FALSE(s.try_acquire());
    s.release(2);
  }());
}

TEST_P(Sync, SemaphoreReleaseOfManyWakesManyAndKeepsTheRest) {
  run([]() -> task<void> {
    semaphore s(0);
    int got = 0;
    auto waiter = [](semaphore& s, int& got) -> task<void> {
      auto a = co_await s.acquire();
      if (a) ++got;
    };
    scope sc;
    for (int i = 0; i < 3; ++i) sc.spawn(waiter(s, got));
    s.release(5);
    co_await sc.join();
    EXPECT_EQ(got, 3);
    EXPECT_EQ(s.available(), 2u);
  }());
}

// A permit released to a waiter whose stop arrives in the same turn is not lost:
// either the waiter keeps it or it is free again.
TEST_P(Sync, SemaphorePermitSurvivesAStopRacingTheRelease) {
  run([]() -> task<void> {
    for (int order = 0; order < 2; ++order) {
      semaphore s(0);
      std::stop_source stop;
      bool acquired = false;
      auto waiter = [](semaphore& s, std::stop_token t, bool& acquired) -> task<void> {
        auto a = co_await s.acquire().with_stop(t);
        acquired = a.has_value();
      };
      scope sc;
      sc.spawn(waiter(s, stop.get_token(), acquired));
      if (order == 0) {
        s.release();
        stop.request_stop();
      } else {
        stop.request_stop();
        s.release();
      }
      co_await sc.join();
      if (acquired) s.release();
      EXPECT_EQ(acquired, order == 0);
      EXPECT_EQ(s.available(), 1u) << "order " << order;
    }
  }());
}

TEST_P(Sync, WaitGroupReleasesWaitersAtZero) {
  run([]() -> task<void> {
    wait_group g;
    auto w0 = co_await g.wait();  // zero: at once
    EXPECT_TRUE(w0);
    g.add(3);
    int finished = 0;
    auto piece = [](wait_group& g, int& finished, int ms) -> task<void> {
      auto z = co_await sleep_for(std::chrono::milliseconds(ms));
      EXPECT_TRUE(z);
      ++finished;
      g.done();
    };
    auto waiter = [](wait_group& g, int& finished, int& seen) -> task<void> {
      auto w = co_await g.wait();
      EXPECT_TRUE(w);
      seen = finished;
    };
    int seen1 = -1, seen2 = -1;
    scope sc;
    sc.spawn(waiter(g, finished, seen1));
    sc.spawn(waiter(g, finished, seen2));
    for (int i = 0; i < 3; ++i) sc.spawn(piece(g, finished, 1 + i));
    co_await sc.join();
    EXPECT_EQ(seen1, 3);
    EXPECT_EQ(seen2, 3);
    EXPECT_EQ(g.count(), 0u);
    g.add();
    auto w = co_await with_timeout(g.wait(), 5ms);
    EXPECT_FALSE(w);
    EXPECT_EQ(w.error(), std::errc::timed_out);
    EXPECT_EQ(g.count(), 1u);
    g.done();
  }());
}

TEST_P(Sync, BarrierPhasesAreReusableAndNobodyPassesEarly) {
  run([]() -> task<void> {
    barrier b(barrier_size);
    std::vector<int> arrived(barrier_phases, 0);
    auto member = [](barrier& b, std::vector<int>& arrived, int id) -> task<void> {
      for (int p = 0; p < barrier_phases; ++p) {
        for (int k = 0; k < id; ++k) co_await yield();  // arrive at different times
        ++arrived[p];
        auto w = co_await b.arrive_and_wait();
        EXPECT_TRUE(w);
        EXPECT_EQ(arrived[p], barrier_size) << "passed phase " << p << " before everybody arrived";
      }
    };
    scope sc;
    for (int i = 0; i < barrier_size; ++i) sc.spawn(member(b, arrived, i));
    co_await sc.join();
    EXPECT_EQ(b.phase(), static_cast<std::size_t>(barrier_phases));
    EXPECT_EQ(b.remaining(), static_cast<std::size_t>(barrier_size));
  }());
}

TEST_P(Sync, BarrierArrivalOfACancelledWaiterIsWithdrawn) {
  run([]() -> task<void> {
    barrier b(2);
    std::stop_source stop;
    auto quitter = [](barrier& b, std::stop_token t) -> task<void> {
      auto w = co_await b.arrive_and_wait().with_stop(t);
      EXPECT_FALSE(w);
    };
    scope sc;
    sc.spawn(quitter(b, stop.get_token()));
    EXPECT_EQ(b.remaining(), 1u);
    stop.request_stop();
    co_await sc.join();
    EXPECT_EQ(b.remaining(), 2u);
    EXPECT_EQ(b.phase(), 0u);
  }());
}

// The phase completes (the last participant arrives) and the stop of a waiter comes in
// the same turn: the waiter passed the barrier, and the next phase starts whole.
TEST_P(Sync, BarrierPhaseCompletedBeforeAStopCountsAsPassed) {
  run([]() -> task<void> {
    barrier b(2);
    std::stop_source stop;
    bool passed = false;
    auto waiter = [](barrier& b, std::stop_token t, bool& passed) -> task<void> {
      auto w = co_await b.arrive_and_wait().with_stop(t);
      passed = w.has_value();
    };
    scope sc;
    sc.spawn(waiter(b, stop.get_token(), passed));
    auto last = co_await b.arrive_and_wait();  // completes the phase at once
    EXPECT_TRUE(last);
    stop.request_stop();
    co_await sc.join();
    EXPECT_TRUE(passed);
    EXPECT_EQ(b.phase(), 1u);
    EXPECT_EQ(b.remaining(), 2u);
  }());
}

TEST_P(Sync, OneShotEventReleasesEveryWaiterAndStaysSet) {
  run([]() -> task<void> {
    event e;
    int released = 0;
    auto waiter = [](event& e, int& released) -> task<void> {
      auto w = co_await e.wait();
      if (w) ++released;
    };
    scope sc;
    for (int i = 0; i < 5; ++i) sc.spawn(waiter(e, released));
    co_await yield();
    EXPECT_EQ(released, 0);
    e.set();
    co_await sc.join();
    EXPECT_EQ(released, 5);
    auto again = co_await e.wait();  // stays set
    EXPECT_TRUE(again);
    e.reset();
    auto t = co_await with_timeout(e.wait(), 5ms);
    EXPECT_FALSE(t);
    EXPECT_EQ(t.error(), std::errc::timed_out);
  }());
}

TEST_P(Sync, AutoResetEventReleasesOneWaiterPerSet) {
  run([]() -> task<void> {
    event e(event_mode::auto_reset);
    e.set();  // nobody waits: kept for the next wait
    auto kept = co_await e.wait();
    EXPECT_TRUE(kept);
    EXPECT_FALSE(e.is_set());
    std::vector<int> order;
    auto waiter = [](event& e, std::vector<int>& order, int id) -> task<void> {
      auto w = co_await e.wait();
      if (w) order.push_back(id);
    };
    scope sc;
    for (int i = 0; i < 3; ++i) sc.spawn(waiter(e, order, i));
    e.set();
    co_await yield();
    co_await yield();
    EXPECT_EQ(order, std::vector<int>{0});
    e.set();
    e.set();
    co_await sc.join();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
    EXPECT_FALSE(e.is_set());
  }());
}

// A cancelled wait of an auto-reset event does not consume the set that follows.
TEST_P(Sync, AutoResetEventSetIsNotLostToACancelledWaiter) {
  run([]() -> task<void> {
    event e(event_mode::auto_reset);
    std::stop_source stop;
    auto quitter = [](event& e, std::stop_token t) -> task<void> {
      auto w = co_await e.wait().with_stop(t);
      EXPECT_FALSE(w);
    };
    scope sc;
    sc.spawn(quitter(e, stop.get_token()));
    stop.request_stop();
    e.set();
    co_await sc.join();
    EXPECT_TRUE(e.is_set());
  }());
}

TEST_P(Sync, EventSetFromAnotherThreadWakesTheLoop) {
  if (GetParam() == backend_kind::sim)
    GTEST_SKIP() << "a thread outside the simulated world: its virtual time would jump past the 5 s timeout";
  event ping(event_mode::auto_reset);
  std::atomic<int> pongs{0};
  std::atomic<bool> over{false};
  std::thread setter([&] {
    for (int i = 0; i < 200 && !over; ++i) {
      ping.set();
      while (pongs.load() <= i && !over) std::this_thread::yield();
    }
  });
  int woken = run([](event& ping, std::atomic<int>& pongs) -> task<int> {
    int n = 0;
    for (int i = 0; i < 200; ++i) {
      auto w = co_await with_timeout(ping.wait(), 5s);
      if (!w) break;
      ++n;
      pongs.fetch_add(1);
    }
    co_return n;
  }(ping, pongs));
  over = true;
  setter.join();
  EXPECT_EQ(woken, 200);
}

RINGIO_ALL_BACKENDS_AND_SIM(Sync);

}  // namespace
