// SPDX-License-Identifier: Apache-2.0
// Work handed between loops on different threads: post, spawn_on, the runtime, and
// stops requested from other threads while the loops are busy.
#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace std::chrono_literals;

TEST(CrossThread, PostsFromManyThreadsAllRunOnTheLoopThread) {
  constexpr int producers = 4, per_producer = 50'000;
  io_context ctx;
  std::atomic<int> wrong_thread{0};
  long count = 0;  // touched only on the loop's thread
  std::thread::id loop_thread;
  std::thread loop([&] {
    loop_thread = std::this_thread::get_id();
    ctx.run();
  });
  std::vector<std::thread> ps;
  for (int p = 0; p < producers; ++p)
    ps.emplace_back([&] {
      for (int i = 0; i < per_producer; ++i)
        post(ctx, [&] {
          if (std::this_thread::get_id() != loop_thread) ++wrong_thread;
          ++count;
        });
    });
  for (auto& t : ps) t.join();
  std::atomic<bool> seen_all{false};
  post(ctx, [&] {
    seen_all = count == producers * per_producer;
    ctx.stop();
  });
  loop.join();
  EXPECT_TRUE(seen_all.load());
  EXPECT_EQ(count, producers * per_producer);
  EXPECT_EQ(wrong_thread.load(), 0);
}

TEST(CrossThread, SpawnOnRunsTheTaskThereAndComesBack) {
  runtime rt({.threads = 2});
  std::thread::id t0, t1, after;
  rt.run_on_each([&](io_context& ctx, unsigned i) -> task<void> {
    if (i != 0) co_return;
    t0 = std::this_thread::get_id();
    int v = co_await spawn_on(rt.context(1), [](std::thread::id& t1) -> task<int> {
      t1 = std::this_thread::get_id();
      co_return 41;
    }(t1));
    after = std::this_thread::get_id();
    EXPECT_EQ(v, 41);
    (void)ctx;
  });
  EXPECT_NE(t0, t1);
  EXPECT_EQ(t0, after);
}

TEST(CrossThread, RuntimeRunsOneTaskPerLoop) {
  runtime rt({.threads = 3});
  std::atomic<int> ran{0};
  std::vector<std::thread::id> ids(3);
  rt.run_on_each([&](io_context&, unsigned i) -> task<void> {
    ids[i] = std::this_thread::get_id();
    auto s = co_await sleep_for(5ms);
    if (s) ++ran;
  });
  EXPECT_EQ(ran.load(), 3);
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[1], ids[2]);
}

TEST(CrossThread, RuntimeRethrowsATaskException) {
  runtime rt({.threads = 2});
  EXPECT_THROW(rt.run_on_each([](io_context&, unsigned i) -> task<void> {
    co_await yield();
    if (i == 1) throw std::runtime_error("loop 1 failed");
  }),
               std::runtime_error);
}

TEST(CrossThread, StopWhileBusyReturnsPromptly) {
  std::atomic<io_context*> ctx{nullptr};
  std::atomic<bool> stop_busy{false};
  std::thread loop([&] {
    io_context c;
    c.spawn([](std::atomic<bool>& stop_busy) -> task<void> {
      while (!stop_busy) co_await yield();  // always busy
    }(stop_busy));
    ctx = &c;
    c.run();
    stop_busy = true;  // let the task end so the context can shut down
  });
  while (ctx.load() == nullptr) std::this_thread::yield();
  std::this_thread::sleep_for(20ms);
  auto t0 = std::chrono::steady_clock::now();
  ctx.load()->stop();
  loop.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST(CrossThread, ContextBuiltOnOneThreadRunsOnAnother) {
  io_context ctx;  // io_uring: the thread that first runs it becomes the ring's issuer
  int slept = 0;
  std::thread t([&] {
    sync_wait(ctx, [](int& s) -> task<void> {
      auto r = co_await sleep_for(1ms);
      if (r) ++s;
    }(slept));
  });
  t.join();
  EXPECT_EQ(slept, 1);
}

// A loop woken by another io_uring loop gets a ring-to-ring message (no eventfd, no
// syscall of the sender's own); woken by a plain thread it gets the eventfd.
TEST(CrossThread, LoopsWakeEachOtherWithRingMessages) {
  runtime rt({.threads = 2, .context = {.backend = backend_kind::uring}});
  loop_statistics before{}, target{};
  rt.run_on_each([&](io_context& ctx, unsigned i) -> task<void> {
    if (i == 1) co_return;
    // (run_on_each itself wakes loop 1 from this plain thread: count from here on.)
    before = co_await spawn_on(rt.context(1),
                               [](io_context& c) -> task<loop_statistics> { co_return c.stats(); }(rt.context(1)));
    for (int k = 0; k < 20; ++k) {
      auto s = co_await sleep_for(std::chrono::milliseconds(2));  // loop 1 falls asleep meanwhile
      EXPECT_TRUE(s);
      co_await spawn_on(rt.context(1), []() -> task<void> { co_return; }());
    }
    target = co_await spawn_on(rt.context(1),
                               [](io_context& c) -> task<loop_statistics> { co_return c.stats(); }(rt.context(1)));
    (void)ctx;
  });
  EXPECT_GE(target.message_wakes - before.message_wakes, 10u) << "loop 1 was not woken by messages";
  // At most the plain thread's wake-up above, when its completion is dispatched in a
  // later iteration than the one `before` was read in (completions may come late).
  EXPECT_LE(target.eventfd_wakes - before.eventfd_wakes, 1u);
}

TEST(CrossThread, PlainThreadsWakeALoopThroughItsEventfd) {
  for (auto kind : {backend_kind::uring, backend_kind::epoll}) {
    io_context ctx({.backend = kind});
    std::atomic<int> ran{0};
    loop_statistics st{};
    std::thread loop([&] {
      ctx.run();
      st = ctx.stats();
    });
    // Each post after a pause in which the loop falls asleep; on a loaded machine the
    // loop may not have got to sleep within a pause, so a few posts find it awake.
    for (int k = 0; k < 10; ++k) {
      std::this_thread::sleep_for(20ms);
      post(ctx, [&] { ++ran; });
    }
    while (ran < 10) std::this_thread::yield();
    ctx.stop();
    loop.join();
    EXPECT_EQ(ran.load(), 10);
    EXPECT_GE(st.eventfd_wakes, 3u) << to_string(kind);
    EXPECT_EQ(st.message_wakes, 0u);
  }
}

// A loop asleep in the kernel since before the process made a new thread is woken by
// that thread's post. (On Linux 6.16 and later a process's private futexes move to a
// hash of its own as it makes threads, and an io_uring wait on a private futex armed
// before the move is not found by a later FUTEX_WAKE_PRIVATE: the loop's futex is a
// shared one.) Each test runs in a process of its own, which has one thread here.
TEST(CrossThread, AThreadMadeWhileTheLoopSleepsWakesItWithAPost) {
  for (bool futex : {true, false}) {
    io_context ctx(io_context_options{.backend = backend_kind::uring, .quiet = true, .futex_wake = futex});
    using clock = std::chrono::steady_clock;
    std::atomic<clock::rep> posted_at{0}, ran_at{0};
    std::thread maker;
    sync_wait(ctx,
              [](io_context& ctx, std::atomic<clock::rep>& posted_at, std::atomic<clock::rep>& ran_at,
                 std::thread& maker) -> task<void> {
                (void)co_await sleep_for(20ms);  // the loop's wake-up wait is armed by now
                // A new thread posts once the loop sleeps again, in the 4 s sleep below: a lost
                // wake-up leaves the post to run when that sleep ends.
                maker = std::thread([&ctx, &posted_at, &ran_at] {
                  std::this_thread::sleep_for(100ms);
                  posted_at = clock::now().time_since_epoch().count();
                  post(ctx, [&ran_at] { ran_at = clock::now().time_since_epoch().count(); });
                });
                (void)co_await sleep_for(4s);
              }(ctx, posted_at, ran_at, maker));
    maker.join();
    ASSERT_NE(ran_at.load(), 0);
    const auto waited = clock::duration(ran_at.load() - posted_at.load());
    EXPECT_LT(waited, 2s) << "futex_wake " << futex << ": the post waited for the loop's own timer";
  }
}

// io_context_options::futex_wake on and off: a plain thread's posts wake the loop either
// way, and describe() says which way it is.
TEST(CrossThread, PlainThreadsWakeALoopThroughAFutexOrItsEventfd) {
  for (bool futex : {true, false}) {
    std::optional<io_context> made;
    try {
      made.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .futex_wake = futex});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "io_uring cannot start here: " << e.what();
    }
    io_context& ctx = *made;
    const std::string d = ctx.describe();
    if (futex && d.find("thread wake-ups futex") == std::string::npos) {
      EXPECT_NE(d.find("thread wake-ups eventfd"), std::string::npos) << d;  // a kernel without FUTEX_WAIT
    } else {
      EXPECT_NE(d.find(futex ? "thread wake-ups futex" : "thread wake-ups eventfd"), std::string::npos) << d;
    }
    std::atomic<int> ran{0};
    loop_statistics st{};
    std::thread loop([&] {
      ctx.run();
      st = ctx.stats();
    });
    // Bursts of posts, each after a pause in which the loop falls asleep (on a loaded
    // machine not always: only one of the ten bursts has to find it asleep).
    for (int burst = 0; burst < 10; ++burst) {
      std::this_thread::sleep_for(20ms);
      for (int k = 0; k < 20; ++k) post(ctx, [&] { ++ran; });
      const auto give_up = std::chrono::steady_clock::now() + 10s;  // a lost wake-up
      while (ran < (burst + 1) * 20 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
      if (ran < (burst + 1) * 20) {
        ADD_FAILURE() << "the loop was not woken (" << (futex ? "futex" : "eventfd") << ")";
        break;
      }
    }
    ctx.stop();
    loop.join();
    EXPECT_EQ(ran.load(), 200);
    EXPECT_GE(st.eventfd_wakes, 1u) << (futex ? "futex" : "eventfd");
  }
}

namespace {
int threads_named(const std::string& prefix) {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string comm;
    std::getline(f, comm);
    if (comm.rfind(prefix, 0) == 0) ++n;
  }
  closedir(d);
  return n;
}
}  // namespace

// With SQPOLL, attaching (IORING_SETUP_ATTACH_WQ) makes the rings of a runtime share
// one kernel submission thread: counted here from the threads the kernel created.
TEST(CrossThread, AttachedRingsShareOneKernelPollThread) {
  for (bool attach : {true, false}) {
    // The kernel retires a poll thread shortly after its last ring closes.
    int baseline = threads_named("iou-sqp");
    for (int i = 0; i < 200 && baseline > 0; ++i) {
      std::this_thread::sleep_for(10ms);
      baseline = threads_named("iou-sqp");
    }
    runtime_options o;
    o.threads = 3;
    o.context.backend = backend_kind::uring;
    o.context.sqpoll = true;
    o.attach_wq = attach;
    std::unique_ptr<runtime> rt;
    try {
      rt = std::make_unique<runtime>(o);
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "SQPOLL rings cannot be created here: " << e.what();
    }
    rt->run_on_each([](io_context&, unsigned) -> task<void> {
      auto r = co_await nop();  // every ring runs, so its poll thread exists
      EXPECT_TRUE(r);
    });
    EXPECT_EQ(threads_named("iou-sqp") - baseline, attach ? 1 : 3) << (attach ? "attached" : "separate");
    EXPECT_EQ(rt->context(2).describe().find("ATTACH_WQ") != std::string::npos, attach);
  }
}
