// SPDX-License-Identifier: Apache-2.0
// Timeouts that fire and timeouts that do not.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/ringio_clock.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
using clock_type = ringio_test::ringio_clock;  // virtual time under sim

namespace {

class Timeouts : public backend_test {};

TEST_P(Timeouts, RecvTimesOutWhenNothingArrives) {
  socket_pair p;
  auto t0 = clock_type::now();
  auto r = run([](stream_socket& s) -> task<result<std::size_t>> {
    std::array<char, 16> buf;
    co_return co_await with_timeout(s.recv(buf), 50ms);
  }(p.a));
  auto elapsed = clock_type::now() - t0;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::timed_out);
  EXPECT_GE(elapsed, 49ms);
  EXPECT_LT(elapsed, 5s);
}

TEST_P(Timeouts, TimeoutDoesNotFireWhenDataArrivesFirst) {
  socket_pair p;
  auto r = run([](stream_socket& a, stream_socket& b) -> task<result<std::size_t>> {
    std::array<char, 16> buf;
    auto writer = [](stream_socket& b) -> task<void> {
      auto s = co_await sleep_for(10ms);
      EXPECT_TRUE(s);
      auto w = co_await b.send_all(std::string_view("ping"));
      EXPECT_TRUE(w);
    };
    auto [w, got] = co_await when_all(writer(b), with_timeout(a.recv(buf), 5s));
    (void)w;
    co_return got;
  }(p.a, p.b));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 4u);
}

TEST_P(Timeouts, AcceptTimesOut) {
  auto l = listen_loopback();
  auto r = run(
      [](stream_listener& l) -> task<result<stream_socket>> { co_return co_await with_timeout(l.accept(), 30ms); }(l));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::timed_out);
}

TEST_P(Timeouts, DeadlineBoundsAWholeSendAll) {
  // The peer never reads: send_all fills the buffers and then waits forever.
  socket_pair p;
  std::vector<std::byte> big(64 << 20);
  auto t0 = clock_type::now();
  auto r = run([](stream_socket& s, std::vector<std::byte>& big) -> task<result<std::size_t>> {
    co_return co_await with_timeout(s.send_all(big), 100ms);
  }(p.a, big));
  // The socket buffers took some bytes before the deadline: like write(2), the result
  // is that short count (an error would lose it); timed_out only if nothing moved.
  if (r) {
    EXPECT_GT(*r, 0u);
    EXPECT_LT(*r, big.size());
  } else {
    EXPECT_EQ(r.error(), std::errc::timed_out);
  }
  EXPECT_LT(clock_type::now() - t0, 5s);
}

TEST_P(Timeouts, SleepSleepsAtLeastItsDuration) {
  auto t0 = clock_type::now();
  auto r = run([]() -> task<result<void>> { co_return co_await sleep_for(30ms); }());
  EXPECT_TRUE(r);
  EXPECT_GE(clock_type::now() - t0, 29ms);
}

TEST_P(Timeouts, SleepUntilAPastTimeCompletesAtOnce) {
  auto t0 = clock_type::now();
  auto r = run([]() -> task<result<void>> { co_return co_await sleep_until(clock_type::now() - 1s); }());
  EXPECT_TRUE(r);
  EXPECT_LT(clock_type::now() - t0, 1s);
}

TEST_P(Timeouts, ManyTimersFireInDeadlineOrder) {
  std::vector<int> order;
  run([](std::vector<int>& order) -> task<void> {
    scope s;
    for (int i : {5, 1, 4, 2, 3})
      s.spawn([](std::vector<int>& o, int i) -> task<void> {
        auto r = co_await sleep_for(std::chrono::milliseconds(i * 15));
        if (r) o.push_back(i);
      }(order, i));
    co_await s.join();
  }(order));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST_P(Timeouts, NopCompletes) {
  auto r = run([]() -> task<result<void>> { co_return co_await nop(); }());
  EXPECT_TRUE(r);
}

RINGIO_ALL_BACKENDS_AND_SIM(Timeouts);

}  // namespace

namespace {

class TaskTimeouts : public backend_test {};

TEST_P(TaskTimeouts, ATaskThatTakesTooLongIsCancelledAndTimesOut) {
  std::vector<std::string> log;
  auto r = run([](std::vector<std::string>& log) -> task<result<int>> {
    auto slow = [](std::vector<std::string>& log) -> task<int> {
      auto s = co_await sleep_for(10s);
      log.push_back(s ? "finished" : "cancelled");
      co_return 1;
    };
    co_return co_await with_timeout(slow(log), 30ms);
  }(log));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::timed_out);
  EXPECT_EQ(log, std::vector<std::string>{"cancelled"}) << "the task was not awaited before returning";
}

TEST_P(TaskTimeouts, AFastTaskKeepsItsValueAndFlattensResults) {
  auto r = run([]() -> task<result<std::size_t>> {
    auto quick = []() -> task<result<std::size_t>> { co_return std::size_t{42}; };
    co_return co_await with_timeout(quick(), 5s);
  }());
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 42u);
  auto v = run([]() -> task<result<void>> {
    co_return co_await with_timeout([]() -> task<void> { co_await yield(); }(), 5s);
  }());
  EXPECT_TRUE(v);
}

RINGIO_ALL_BACKENDS_AND_SIM(TaskTimeouts);

}  // namespace
