// SPDX-License-Identifier: Apache-2.0
// Regression tests of the core's guarantees: lifetimes (nothing touches freed memory),
// no lost results or wake-ups, deadlines and caps that cannot stall the loop, and
// cancellation that composes (explicit tokens, scopes, spawn_on, with_timeout).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/watchdog.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

namespace {

auto elapsed_since(clk::time_point t0) { return clk::now() - t0; }

class CoreGuarantees : public backend_test {};

// ---- lifetimes ----

// The receiver takes the last value on its second look while the sender, which saw it
// waiting, queues a wake-up on the loop; the channel is then destroyed before the loop
// runs that wake-up (it used to read the freed channel; a crash seen once in the suite).
TEST(ChannelLifetime, DestroyedWhileItsLastWakeUpIsStillQueued) {
  io_context ctx;
  for (int round = 0; round < 2000; ++round) {
    auto ch = std::make_unique<channel<int>>(4);
    std::thread sender([&ch] {
      for (int i = 0; i < 3; ++i)
        while (!ch->try_send(i)) std::this_thread::yield();
    });
    int got = sync_wait(ctx, [](channel<int>& c) -> task<int> {
      int n = 0;
      while (n < 3) {
        auto v = co_await c.receive();
        if (!v) break;
        ++n;
      }
      co_return n;
    }(*ch));
    sender.join();
    ch.reset();
    ctx.run_until_idle();  // runs whatever wake-up the sender queued
    ASSERT_EQ(got, 3);
  }
}

// A receive with a deadline, waiting on an idle socket, stopped after a yield.
task<std::error_code> recv_stopped_while_waiting(stream_socket& s, std::chrono::milliseconds deadline) {
  std::stop_source src;
  std::array<char, 16> buf{};
  auto stopper = [](std::stop_source& src) -> task<void> {
    co_await yield();
    src.request_stop();
  };
  auto [got, unused] = co_await when_all(with_timeout(s.recv(buf), deadline).with_stop(src.get_token()), stopper(src));
  (void)unused;
  co_return got.error();
}

// A channel owned by its receiving task: a send reaches the waiting receiver, the loop
// returns before running the wake-up (sync_wait ends as soon as its task does), and the
// context's shutdown then cancels the receiver, whose frame (and channel) goes away
// before the queued wake-up runs. The wake-up must not touch the dead channel, whether
// the send came from the loop's own thread or from another one.
void channel_dies_at_shutdown(backend_kind k, bool from_other_thread) {
  channel<int>* ch = nullptr;  // outlive the context: the receiver writes them at shutdown
  int received = 0;
  io_context ctx({.backend = k, .quiet = true});
  ctx.spawn([](channel<int>*& out, int& received) -> task<void> {
    channel<int> mine(4);
    out = &mine;
    for (;;) {
      auto v = co_await mine.receive();
      if (!v) break;
      ++received;
    }
    out = nullptr;
  }(ch, received));
  sync_wait(ctx, [](channel<int>*& ch, bool other) -> task<void> {
    co_await yield();  // the receiver waits
    if (other) {
      std::thread([c = ch] { c->try_send(1); }).join();
    } else {
      ch->try_send(1);
    }
    co_return;
  }(ch, from_other_thread));
  // ~io_context: cancels the receiver, runs what is queued
}

TEST_P(CoreGuarantees, ChannelOwnedByItsReceiverDiesAtShutdownAfterASend) {
  channel_dies_at_shutdown(GetParam(), false);
}

TEST(ChannelLifetime, ChannelOwnedByItsReceiverDiesAtShutdownAfterASendFromAnotherThread) {
  for (auto k : {backend_kind::uring, backend_kind::epoll, backend_kind::uring_poll}) channel_dies_at_shutdown(k, true);
}

// uring-poll without DEFER_TASKRUN: a cancelled readiness wait whose cancel's CQE
// arrives after the poll's must still leave the deadline heap (its frame is freed
// before the deadline passes, and expire_polls() would read it).
TEST(CoreGuaranteesUringPoll, CancelledPollWithDeadlineLeavesTheHeapWhicheverCqeIsLast) {
  for (bool defer : {false, true}) {
    std::optional<io_context> ctx;
    try {
      ctx.emplace(io_context_options{.backend = backend_kind::uring_poll, .defer_taskrun = defer, .quiet = true});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "uring-poll cannot start here: " << e.what();
    }
    socket_pair p;
    for (int i = 0; i < 20; ++i) {
      auto err = sync_wait(*ctx, recv_stopped_while_waiting(p.a, 20ms));
      EXPECT_EQ(err, std::errc::operation_canceled);
    }
    auto slept = sync_wait(*ctx, []() -> task<result<void>> { co_return co_await sleep_for(40ms); }());
    EXPECT_TRUE(slept);
  }
}

// A send from the receiver's own loop completes the wait without the inbox, so the
// channel may go away in the same loop iteration as the send (chat-server outboxes).
TEST_P(CoreGuarantees, ChannelSentToAndDestroyedInTheSameIteration) {
  constexpr int clients = 100;
  auto r = run([]() -> task<int> {
    std::vector<std::unique_ptr<channel<int>>> outboxes;
    for (int i = 0; i < clients; ++i) outboxes.push_back(std::make_unique<channel<int>>(8));
    int delivered = 0;
    {
      scope writers;
      for (auto& ch : outboxes)
        writers.spawn([](channel<int>& c, int& delivered) -> task<void> {
          for (;;) {
            auto v = co_await c.receive();
            if (!v) co_return;
            ++delivered;
          }
        }(*ch, delivered));
      co_await yield();
      for (auto& ch : outboxes) ch->try_send(1);  // everyone leaves at once
      writers.request_stop();
      co_await writers.join();
    }
    outboxes.clear();
    co_await yield();
    co_return delivered;
  }());
  EXPECT_LE(r, clients);
}

// uring-poll: a readiness wait with a deadline, cancelled so that the cancel's CQE
// arrives after the poll's: the finished operation must leave the deadline heap (its
// frame is gone by the time the deadline passes).
TEST_P(CoreGuarantees, CancelledWaitWithDeadlineLeavesNothingBehind) {
  socket_pair p;
  for (int i = 0; i < 20; ++i) {
    auto err = run(recv_stopped_while_waiting(p.a, 30ms));
    EXPECT_EQ(err, std::errc::operation_canceled);
  }
  // Let every deadline pass while the loop runs other work.
  auto slept = run([]() -> task<result<void>> { co_return co_await sleep_for(60ms); }());
  EXPECT_TRUE(slept);
}

// ---- no lost results ----

// The deadline expires while the loop is busy and data arrives before the loop looks:
// the timer and the receive complete in the same batch. with_timeout(task) must
// deliver the bytes if the task got them; if it reports timed_out the bytes must
// still be in the socket.
TEST_P(CoreGuarantees, WithTimeoutOfATaskKeepsTheResultWhenTheCancelLoses) {
  for (int round = 0; round < 10; ++round) {
    socket_pair p;
    auto [res, rest] = run([](socket_pair& p) -> task<std::pair<result<std::size_t>, std::size_t>> {
      std::array<char, 16> buf{};
      scope busy;
      busy.spawn([](socket_pair& p) -> task<void> {
        co_await yield();
        auto t0 = clk::now();
        while (elapsed_since(t0) < 5ms) {
        }
        EXPECT_EQ(::send(p.b.native_handle(), "hello", 5, 0), 5);  // arrives after the deadline
        while (elapsed_since(t0) < 10ms) {
        }
      }(p));
      auto r = co_await with_timeout(
          [](stream_socket& s, std::array<char, 16>& buf) -> task<result<std::size_t>> {
            co_return co_await s.recv(buf);
          }(p.a, buf),
          2ms);
      co_await busy.join();
      std::size_t rest = 0;
      if (!r) {
        auto again = co_await with_timeout(p.a.recv(buf), 1s);
        rest = again.value_or(0);
      }
      co_return std::pair{r, rest};
    }(p));
    if (res) {
      EXPECT_EQ(*res, 5u);
    } else {
      EXPECT_EQ(res.error(), std::errc::timed_out);
      EXPECT_EQ(rest, 5u) << "timed out, and the bytes are gone";
    }
  }
}

// ---- wake-ups ----

// A loop that asks another (sleeping) loop to stop and then returns at once must not
// keep the wake-up message in its own submission queue.
TEST(CrossThreadGuarantees, StopFromALoopThatReturnsAtOnceWakesTheTarget) {
  io_context a;
  sync_wait(a, []() -> task<void> { (void)co_await nop(); }());  // a's ring is enabled
  for (int round = 0; round < 20; ++round) {
    std::atomic<io_context*> target{nullptr};
    std::thread tb([&] {
      io_context b;  // built, run and destroyed on its own thread
      target = &b;
      b.run();
      target = nullptr;
    });
    while (target.load() == nullptr) std::this_thread::yield();
    std::this_thread::sleep_for(5ms);  // b is asleep in the kernel
    sync_wait(a, [](io_context& b) -> task<void> {
      b.stop();
      co_return;
    }(*target.load()));
    watchdog dog(3s, [&] {
      if (io_context* b = target.load()) b->stop();
    });
    tb.join();
    ASSERT_FALSE(dog.disarm()) << "the target loop was never woken (round " << round << ")";
  }
}

// ---- SQ, in-flight cap ----

task<int> many_nops(int n) {
  std::vector<task<result<void>>> ts;
  for (int i = 0; i < n; ++i) ts.push_back([]() -> task<result<void>> { co_return co_await nop(); }());
  auto rs = co_await when_all(std::move(ts));
  int ok = 0;
  for (auto& r : rs) ok += r ? 1 : 0;
  co_return ok;
}

TEST(LoopLimitsGuarantees, SqpollWithATinySubmissionQueue) {
  for (unsigned sq : {8u, 4096u}) {
    std::optional<io_context> ctx;
    try {
      ctx.emplace(io_context_options{.backend = backend_kind::uring, .sq_entries = sq, .sqpoll = true, .quiet = true});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "SQPOLL cannot start here: " << e.what();
    }
    const int n = sq == 8 ? 256 : 10000;
    EXPECT_EQ(sync_wait(*ctx, many_nops(n)), n) << "sq " << sq;
  }
}

// Idle reads fill the in-flight cap; a sleep and a deadline must still fire.
TEST_P(CoreGuarantees, DeadlinesFireWhileIdleReadsFillTheCap) {
  if (GetParam() == backend_kind::epoll) GTEST_SKIP() << "epoll has no in-flight cap";
  io_context ctx({.backend = GetParam(), .max_in_flight = 8, .quiet = true});
  std::vector<socket_pair> idle(10);
  socket_pair extra;
  watchdog dog(5s, [&] {
    for (auto& p : idle) ::shutdown(p.b.native_handle(), SHUT_RDWR);
    ::shutdown(extra.b.native_handle(), SHUT_RDWR);
  });
  auto t0 = clk::now();
  auto [slept, timed] = sync_wait(
      ctx,
      [](std::vector<socket_pair>& idle, socket_pair& extra) -> task<std::pair<result<void>, result<std::size_t>>> {
        scope readers;
        for (auto& p : idle)
          readers.spawn([](stream_socket& s) -> task<void> {
            std::array<char, 8> buf;
            (void)co_await s.recv(buf);
          }(p.a));
        auto slept = co_await sleep_for(20ms);
        std::array<char, 8> buf;
        auto timed = co_await with_timeout(extra.a.recv(buf), 20ms);
        readers.request_stop();
        co_await readers.join();
        co_return std::pair{slept, timed};
      }(idle, extra));
  EXPECT_FALSE(dog.disarm()) << "a deadline waited behind idle reads";
  EXPECT_TRUE(slept);
  EXPECT_EQ(timed.error(), std::errc::timed_out);
  EXPECT_LT(elapsed_since(t0), 2s);
}

// Caps below what one operation can post (itself, a linked timeout, a cancel).
TEST_P(CoreGuarantees, TinyInFlightCapsStillRunOperations) {
  if (GetParam() == backend_kind::epoll) GTEST_SKIP() << "epoll has no in-flight cap";
  for (unsigned cap : {1u, 2u, 3u}) {
    io_context ctx({.backend = GetParam(), .max_in_flight = cap, .quiet = true});
    socket_pair p;
    ASSERT_EQ(::send(p.b.native_handle(), "abc", 3, 0), 3);
    std::atomic<bool> finished{false};
    watchdog dog(5s, [&] {
      if (!finished) ::shutdown(p.b.native_handle(), SHUT_RDWR);
    });
    auto n = sync_wait(ctx, [](stream_socket& s) -> task<std::size_t> {
      auto slept = co_await sleep_for(1ms);
      auto nopped = co_await nop();
      std::array<char, 8> buf;
      auto got = co_await with_timeout(s.recv(buf), 1s);
      co_return slept&& nopped ? got.value_or(0) : 0;
    }(p.a));
    finished = true;
    EXPECT_FALSE(dog.disarm()) << "cap " << cap;
    EXPECT_EQ(n, 3u) << "cap " << cap;
  }
}

// ---- cancellation that composes ----

// An operation given its own token still obeys when_any's.
TEST_P(CoreGuarantees, ExplicitTokenAddsToTheInheritedOne) {
  socket_pair p;
  auto t0 = clk::now();
  auto idx = run([](stream_socket& s) -> task<std::size_t> {
    std::stop_source own;  // never requested
    auto v = co_await when_any(
        [](stream_socket& s, std::stop_token t) -> task<result<std::size_t>> {
          std::array<char, 8> buf;
          co_return co_await s.recv(buf).with_stop(t);
        }(s, own.get_token()),
        sleep_for(10ms));
    co_return v.index();
  }(p.a));
  EXPECT_EQ(idx, 1u);
  EXPECT_LT(elapsed_since(t0), 1s);
}

TEST_P(CoreGuarantees, ChannelReceiveWithItsOwnTokenObeysTheTaskToo) {
  channel<int> ch(4);
  std::stop_source own;
  auto t0 = clk::now();
  auto r = run(with_timeout(ch.receive(own.get_token()), 10ms));
  EXPECT_EQ(r.error(), std::errc::timed_out);
  EXPECT_LT(elapsed_since(t0), 1s);
}

// A scope created inside a task inherits its token: stopping the outer scope reaches
// the children of the inner one.
TEST_P(CoreGuarantees, InnerScopeInheritsTheCreatingTasksToken) {
  auto t0 = clk::now();
  auto inner_result = run([]() -> task<std::error_code> {
    std::error_code seen;
    scope outer;
    outer.spawn([](std::error_code& seen) -> task<void> {
      scope inner;
      inner.spawn([](std::error_code& seen) -> task<void> {
        auto r = co_await sleep_for(3s);
        if (!r) seen = r.error();
      }(seen));
      co_await inner.join();
    }(seen));
    co_await yield();
    outer.request_stop();
    co_await outer.join();
    co_return seen;
  }());
  EXPECT_EQ(inner_result, std::errc::operation_canceled);
  EXPECT_LT(elapsed_since(t0), 1s);
}

// The README's serve() pattern: stopping the task that runs the accept loop reaches
// the connections spawned into its scope without calling request_stop by hand.
TEST_P(CoreGuarantees, ServeLoopShutsDownWithItsConnections) {
  auto listener = listen_loopback();
  auto addr = address_of(listener);
  auto t0 = clk::now();
  run([](stream_listener& l, socket_address addr) -> task<void> {
    scope server;
    server.spawn([](stream_listener& l) -> task<void> {
      scope conns;
      for (;;) {
        auto s = co_await l.accept();
        if (!s) break;
        conns.spawn([](stream_socket s) -> task<void> {
          std::array<char, 64> buf;
          for (;;) {
            auto n = co_await s.recv(buf);
            if (!n || *n == 0) co_return;
          }
        }(std::move(*s)));
      }
      co_await conns.join();
    }(l));
    auto c = co_await stream_socket::connect(addr);
    EXPECT_TRUE(c);
    auto slept = co_await sleep_for(20ms);
    EXPECT_TRUE(slept);
    server.request_stop();
    co_await server.join();
  }(listener, addr));
  EXPECT_LT(elapsed_since(t0), 1s);
}

// ---- spawn_on ----

TEST(CrossThreadGuarantees, SpawnOnChildIsCancelledByTheAwaitersToken) {
  io_context home;
  io_context other;
  std::thread t([&] { other.run(); });
  auto t0 = clk::now();
  auto r = sync_wait(home, with_timeout(
                               [](io_context& other) -> task<result<void>> {
                                 co_return co_await spawn_on(
                                     other, []() -> task<result<void>> { co_return co_await sleep_for(2s); }());
                               }(other),
                               100ms));
  auto took = elapsed_since(t0);
  other.stop();
  t.join();
  EXPECT_EQ(r.error(), std::errc::timed_out);
  EXPECT_LT(took, 1s);
}

// ~io_context with a task parked in spawn_on: the child is stopped, the task resumes
// on its own loop before the context is gone (it used to be abandoned, and the child's
// completion then posted to the freed context).
TEST(CrossThreadGuarantees, ContextDestroyedWhileATaskWaitsInSpawnOn) {
  io_context other;
  std::thread t([&] { other.run(); });
  std::atomic<bool> resumed{false};
  std::error_code child_error;
  auto t0 = clk::now();
  {
    io_context home;
    home.spawn([](io_context& other, std::atomic<bool>& resumed, std::error_code& err) -> task<void> {
      auto r = co_await spawn_on(other, []() -> task<result<void>> { co_return co_await sleep_for(2s); }());
      if (!r) err = r.error();
      resumed = true;
    }(other, resumed, child_error));
    sync_wait(home, []() -> task<void> {
      auto s = co_await sleep_for(20ms);  // the child is running on the other loop
      (void)s;
    }());
  }  // ~io_context
  auto took = elapsed_since(t0);
  other.stop();
  t.join();
  EXPECT_TRUE(resumed.load());
  EXPECT_EQ(child_error, std::errc::operation_canceled);
  EXPECT_LT(took, 1s);
}

}  // namespace

RINGIO_ALL_BACKENDS_AND_SIM(CoreGuarantees);
