// SPDX-License-Identifier: Apache-2.0
// Properties of the loop itself, measured by its counters.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <span>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/echo.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

class Loop : public backend_test {};

// Every iteration makes exactly one trip to the kernel: submissions are batched with
// the wait (io_uring_submit_and_wait), never issued one by one.
TEST_P(Loop, OneKernelCallPerIteration) {
  auto l = listen_loopback();
  auto at = address_of(l);
  auto before = ctx().stats();
  run([](stream_listener& l, socket_address at) -> task<void> {
    constexpr int connections = 20, round_trips = 200;
    scope s;
    for (int c = 0; c < connections; ++c) {
      s.spawn([](stream_listener& l) -> task<void> {
        auto conn = co_await l.accept();
        if (conn) co_await echo_until_eof(std::move(*conn));
      }(l));
      s.spawn([](socket_address at) -> task<void> {
        auto conn = co_await stream_socket::connect(at);
        std::array<std::byte, 64> buf{};
        for (int i = 0; i < round_trips; ++i) {
          auto w = co_await conn->send_all(buf);
          auto r = co_await conn->recv_exact(buf);
          if (!w || !r) break;
        }
      }(at));
    }
    co_await s.join();
  }(l, at));
  auto after = ctx().stats();
  auto iterations = after.iterations - before.iterations;
  auto waits = after.kernel_waits - before.kernel_waits;
  EXPECT_GT(iterations, 100u);
  EXPECT_EQ(waits, iterations);
  EXPECT_GT(after.completions - before.completions, 4000u);
}

RINGIO_ALL_BACKENDS_AND_SIM(Loop);

}  // namespace

namespace {

// A tiny ring: 8 SQ entries, 16 CQ entries, at most 8 CQEs pending. Hundreds of
// operations started at once must wait in the backlog (never overflowing the CQ) and
// still all complete, with a full SQ submitted before more SQEs are taken.
TEST(LoopLimits, ManyMoreOperationsThanTheRingHoldsAllComplete) {
  io_context ctx({.backend = backend_kind::uring, .sq_entries = 8, .cq_entries = 16, .max_in_flight = 8});
  int done = sync_wait(ctx, []() -> task<int> {
    int done = 0;
    scope s;
    for (int i = 0; i < 300; ++i)
      s.spawn([](int& d, int i) -> task<void> {
        auto r = co_await sleep_for(std::chrono::microseconds(100 + i % 50));
        auto n = co_await nop();
        if (r && n) ++d;
      }(done, i));
    co_await s.join();
    co_return done;
  }());
  EXPECT_EQ(done, 300);
  EXPECT_NE(ctx.describe().find("max in flight 8"), std::string::npos) << ctx.describe();
}

TEST(LoopLimits, DeferTaskrunCanBeLeftOut) {
  io_context with({.backend = backend_kind::uring});
  io_context without({.backend = backend_kind::uring, .defer_taskrun = false});
  EXPECT_NE(with.describe().find("DEFER_TASKRUN"), std::string::npos) << with.describe();
  EXPECT_EQ(without.describe().find("DEFER_TASKRUN"), std::string::npos) << without.describe();
  EXPECT_NE(without.describe().find("COOP_TASKRUN"), std::string::npos) << without.describe();
  auto r = sync_wait(without, []() -> task<bool> {
    auto slept = co_await sleep_for(std::chrono::milliseconds(1));
    auto n = co_await nop();
    co_return slept&& n;
  }());
  EXPECT_TRUE(r);
}

// Receives with deadlines (each a RECV and its LINK_TIMEOUT) started before the loop's
// first poll on an 8-entry SQ, after `plain` plain receives: with an odd count before
// it, some receive takes the SQ's last slot. The pair must still go in one submission:
// a link cut there leaves the receive without its deadline (and it never ends). Each
// times out once; a watchdog stops what is left after 10 s, so a loss shows as a count.
TEST(LoopLimits, ReceivesWithDeadlinesAtTheEndOfAFullSqTimeOut) {
  using namespace std::chrono_literals;
  for (int plain : {0, 1, 2, 3}) {
    io_context ctx({.backend = backend_kind::uring, .sq_entries = 8, .cq_entries = 64, .quiet = true});
    socket_pair p;
    constexpr int timed = 9;
    int timed_out = 0, ended = 0;
    sync_wait(ctx, [](stream_socket& s, int plain, int& timed_out, int& ended) -> task<void> {
      scope waits, ops;
      for (int i = 0; i < plain; ++i)
        waits.spawn([](stream_socket& s) -> task<void> {
          std::byte b{};
          (void)co_await s.recv(mutable_buffer(&b, 1), MSG_PEEK);
        }(s));
      for (int i = 0; i < timed; ++i)
        ops.spawn([](stream_socket& s, int& timed_out, int& ended) -> task<void> {
          std::byte b{};
          auto r = co_await with_timeout(s.recv(mutable_buffer(&b, 1), MSG_PEEK), 20ms);
          ++ended;
          if (!r && r.error() == std::errc::timed_out) ++timed_out;
        }(s, timed_out, ended));
      scope watchdog;
      watchdog.spawn([](scope& ops, int& ended) -> task<void> {
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (ended < timed && std::chrono::steady_clock::now() < until) (void)co_await sleep_for(5ms);
        ops.request_stop();
      }(ops, ended));
      co_await ops.join();
      waits.request_stop();
      co_await waits.join();
      co_await watchdog.join();
    }(p.b, plain, timed_out, ended));
    EXPECT_EQ(timed_out, timed) << plain << " plain receives first; " << ctx.describe();
    EXPECT_EQ(ctx.in_flight(), 0u);
  }
}

TEST(LoopLimits, EchoThroughATinyRing) {
  io_context ctx({.backend = backend_kind::uring, .sq_entries = 4, .cq_entries = 8, .max_in_flight = 6});
  auto l = listen_loopback();
  auto at = address_of(l);
  int ok = sync_wait(ctx, [](stream_listener& l, socket_address at) -> task<int> {
    int ok = 0;
    scope s;
    for (int c = 0; c < 30; ++c) {
      s.spawn([](stream_listener& l) -> task<void> {
        auto conn = co_await l.accept();
        if (conn) co_await echo_until_eof(std::move(*conn));
      }(l));
      s.spawn([](socket_address at, int& ok) -> task<void> {
        auto conn = co_await stream_socket::connect(at);
        std::array<std::byte, 256> out{}, in{};
        for (int i = 0; i < 50; ++i) {
          out[0] = static_cast<std::byte>(i);
          auto w = co_await conn->send_all(out);
          auto r = co_await conn->recv_exact(in);
          if (!w || !r || in != out) co_return;
        }
        ++ok;
      }(at, ok));
    }
    co_await s.join();
    co_return ok;
  }(l, at));
  EXPECT_EQ(ok, 30);
}

}  // namespace
