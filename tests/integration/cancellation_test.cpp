// SPDX-License-Identifier: Apache-2.0
// Cancellation through stop tokens, and every race it has: before the start, while
// in flight (same thread and another thread), after completion, against a completion
// (the real result wins and nothing leaks), and at context shutdown.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

int raw_connect(const socket_address& to) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(s, to.native(), to.size()), 0);
  return s;
}

class Cancellation : public backend_test {};

TEST_P(Cancellation, StopBeforeStartFailsAtOnceAndTouchesNothing) {
  socket_pair p;
  ASSERT_EQ(::send(p.b.native_handle(), "data", 4, 0), 4);
  std::stop_source src;
  src.request_stop();
  auto r = run([](stream_socket& s, std::stop_token t) -> task<std::pair<std::error_code, std::size_t>> {
    std::array<char, 16> buf;
    auto first = co_await s.recv(buf).with_stop(t);
    // No recv was performed: the 4 bytes are still there for an unstopped recv.
    auto second = co_await s.recv(buf);
    co_return std::pair{first.error(), second.value_or(0)};
  }(p.a, src.get_token()));
  EXPECT_EQ(r.first, std::errc::operation_canceled);
  EXPECT_EQ(r.second, 4u);
}

TEST_P(Cancellation, StopWhileInFlightFromTheSameThread) {
  socket_pair p;
  auto r = run([](stream_socket& s) -> task<std::error_code> {
    std::stop_source src;
    std::array<char, 16> buf;
    auto stopper = [](std::stop_source& src) -> task<void> {
      co_await yield();
      src.request_stop();
    };
    auto [got, unused] = co_await when_all(s.recv(buf).with_stop(src.get_token()), stopper(src));
    (void)unused;
    co_return got.error();
  }(p.a));
  EXPECT_EQ(r, std::errc::operation_canceled);
}

TEST_P(Cancellation, StopFromAnotherThread) {
  auto l = listen_loopback();
  std::stop_source src;
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    src.request_stop();
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = run([](stream_listener& l, std::stop_token t) -> task<std::error_code> {
    auto s = co_await l.accept().with_stop(t);
    co_return s.error();
  }(l, src.get_token()));
  stopper.join();
  EXPECT_EQ(r, std::errc::operation_canceled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST_P(Cancellation, StopAfterCompletionChangesNothing) {
  socket_pair p;
  ASSERT_EQ(::send(p.b.native_handle(), "abc", 3, 0), 3);
  std::stop_source src;
  auto r = run([](stream_socket& s, std::stop_source& src) -> task<result<std::size_t>> {
    std::array<char, 16> buf;
    auto got = co_await s.recv(buf).with_stop(src.get_token());
    src.request_stop();
    co_return got;
  }(p.a, src));
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 3u);
}

// A connection that arrives while its accept is being cancelled is either delivered
// by that accept or left in the backlog for the next one: never lost, never leaked.
TEST_P(Cancellation, CancelRacingAnAcceptNeverLosesTheConnection) {
  auto l = listen_loopback();
  auto at = address_of(l);
  int delivered = 0, cancelled = 0;
  for (int i = 0; i < 200; ++i) {
    auto [won, recovered] = run([](stream_listener& l, socket_address at) -> task<std::pair<bool, bool>> {
      std::stop_source src;
      int client = -1;
      auto racer = [](std::stop_source& src, socket_address at, int& client) -> task<void> {
        client = raw_connect(at);  // completes in the kernel's backlog at once
        src.request_stop();        // RACE: the accept may already have completed
        co_return;
      };
      auto [accepted, unused] = co_await when_all(l.accept().with_stop(src.get_token()), racer(src, at, client));
      (void)unused;
      bool won = static_cast<bool>(accepted);
      bool recovered = false;
      if (!won) {
        EXPECT_EQ(accepted.error(), std::errc::operation_canceled);
        auto again = co_await with_timeout(l.accept(), 5s);
        recovered = static_cast<bool>(again);
      }
      ::close(client);
      co_return std::pair{won, recovered};
    }(l, at));
    if (won) ++delivered;
    else if (recovered) ++cancelled;
    else ADD_FAILURE() << "iteration " << i << ": the connection was lost";
  }
  EXPECT_EQ(delivered + cancelled, 200);
  RecordProperty("delivered", delivered);
  RecordProperty("cancelled", cancelled);
}

// when_any cancels the loser while its data may be arriving: the loser either reads
// the data (and reports it) or is cancelled (and the data stays in the socket).
TEST_P(Cancellation, WhenAnyLoserCompletingWhileCancelledLosesNoData) {
  for (int i = 0; i < 100; ++i) {
    socket_pair p1, p2;
    ASSERT_EQ(::send(p1.b.native_handle(), "1111", 4, 0), 4);
    ASSERT_EQ(::send(p2.b.native_handle(), "2222", 4, 0), 4);
    auto [loser_read, left] = run([](stream_socket& a, stream_socket& b) -> task<std::pair<std::size_t, std::size_t>> {
      std::size_t read_a = 0, read_b = 0;
      auto reader = [](stream_socket& s, std::size_t& n) -> task<int> {
        std::array<char, 16> buf;
        auto r = co_await s.recv(buf);
        if (r) n = *r;
        co_return r ? 1 : 0;
      };
      auto v = co_await when_any(reader(a, read_a), reader(b, read_b));
      std::size_t loser = v.index() == 0 ? read_b : read_a;
      // What the loser did not read must still be in its socket.
      stream_socket& loser_sock = v.index() == 0 ? b : a;
      std::array<char, 16> buf;
      std::size_t left = 0;
      while (loser + left < 4) {  // a receive may return fewer bytes than are there
        auto r = co_await with_timeout(loser_sock.recv(buf), 2s);
        if (!r || *r == 0) break;
        left += *r;
      }
      co_return std::pair{loser, left};
    }(p1.a, p2.a));
    EXPECT_EQ(loser_read + left, 4u) << "iteration " << i;
  }
}

TEST_P(Cancellation, DestroyingTheContextCancelsAndDrainsEverything) {
  auto before = open_fd_count();
  std::vector<std::string> log;
  {
    socket_pair p;
    auto l = listen_loopback();
    {
      io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
      auto waiter = [](std::vector<std::string>& log, std::string name, auto op) -> task<void> {
        auto r = co_await std::move(op);
        log.push_back(name + ":" + (r ? std::string("ok") : r.error().message()));
      };
      std::array<char, 16> buf;
      ctx.spawn(waiter(log, "recv", p.a.recv(buf)));
      ctx.spawn(waiter(log, "accept", l.accept()));
      ctx.spawn(waiter(log, "sleep", sleep_for(1h)));
      // Let them start, then destroy the context with all three in flight.
      sync_wait(ctx, []() -> task<void> {
        co_await yield();
        co_await yield();
      }());
      EXPECT_EQ(ctx.in_flight(), 3u);
    }
  }
  ASSERT_EQ(log.size(), 3u);
  for (const auto& line : log) EXPECT_NE(line.find("canceled"), std::string::npos) << line;
  EXPECT_EQ(open_fd_count(), before);
}

TEST_P(Cancellation, OperationsStartedDuringShutdownFailAtOnce) {
  std::vector<std::string> log;
  {
    io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
    ctx.spawn([](std::vector<std::string>& log) -> task<void> {
      auto first = co_await sleep_for(1h);
      log.push_back(first ? "first ok" : "first cancelled");
      auto second = co_await sleep_for(1h);  // started while the context shuts down
      log.push_back(second ? "second ok" : "second cancelled");
    }(log));
    sync_wait(ctx, []() -> task<void> { co_await yield(); }());
  }
  EXPECT_EQ(log, (std::vector<std::string>{"first cancelled", "second cancelled"}));
}

RINGIO_ALL_BACKENDS(Cancellation);

}  // namespace
