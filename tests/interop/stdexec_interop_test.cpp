// SPDX-License-Identifier: Apache-2.0
// ringio senders consumed by stdexec (stdexec::when_all, exec::when_any,
// stdexec::sync_wait) and stdexec senders consumed by ringio's algorithms, with
// cancellation through exec::when_any. Built against stdexec when CMake is given
// -DRINGIO_STDEXEC_DIR=<stdexec checkout or its include dir> (which defines
// RINGIO_EXEC_STDEXEC); otherwise every test skips and says so.
#include <gtest/gtest.h>

#if defined(RINGIO_EXEC_STDEXEC)
#include <exec/when_any.hpp>
#include <stdexec/execution.hpp>
#endif

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <string>
#include <system_error>

#include "ringio/exec.hpp"
#include "ringio/ringio.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
namespace ex = ringio::exec;

namespace {

#if defined(RINGIO_EXEC_STDEXEC)

void send_text(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0);
    done += static_cast<std::size_t>(n);
  }
}

static_assert(stdexec::sender<ex::io_sender<ringio::detail::recv_op>>);
static_assert(stdexec::scheduler<ex::scheduler>);

// A scheduler's schedule() names its loop as completion scheduler; exec::yield(), whose
// loop is only known when it starts, names none.
template <class S>
concept names_completion_scheduler =
    requires(const S& s) { stdexec::get_completion_scheduler<stdexec::set_value_t>(stdexec::get_env(s)); };
static_assert(names_completion_scheduler<ex::schedule_sender>);
static_assert(!names_completion_scheduler<decltype(ex::yield())>);

// stdexec::sync_wait runs its own run_loop, not an io_context: ringio senders hop onto
// a loop running on another thread with ringio's starts_on and back with continues_on.
struct loop_thread {
  io_context ctx;
  std::thread t;
  loop_thread() {
    std::atomic<bool> ready{false};
    t = std::thread([this, &ready] {
      ready = true;
      ctx.run();
    });
    while (!ready) std::this_thread::yield();
  }
  ~loop_thread() {
    ctx.stop();
    t.join();
  }
};

TEST(StdexecInterop, StdexecWhenAllOfRingioSenders) {
  io_context ctx;
  socket_pair p;
  const std::string data = "both ways";
  std::array<char, 64> in{};
  auto r = ex::sync_wait(
      ctx, stdexec::when_all(ex::send_all(p.b, std::as_bytes(std::span(data))),
                             ex::recv_exact(p.a, std::as_writable_bytes(std::span(in).first(data.size())))));
  ASSERT_TRUE(r);
  auto [sent, got] = *r;
  EXPECT_EQ(sent, data.size());
  EXPECT_EQ(std::string(in.data(), got), data);
}

TEST(StdexecInterop, StdexecSyncWaitOnARingioLoopThread) {
  loop_thread loop;
  socket_pair p;
  send_text(p.b.native_handle(), "via stdexec");
  std::array<char, 64> in{};
  auto r =
      stdexec::sync_wait(ex::starts_on(ex::scheduler(loop.ctx), ex::recv(p.a, std::as_writable_bytes(std::span(in)))) |
                         stdexec::then([&](std::size_t n) { return std::string(in.data(), n); }));
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<0>(*r), "via stdexec");
}

TEST(StdexecInterop, RingioAlgorithmsConsumeStdexecSenders) {
  io_context ctx;
  auto r = ex::sync_wait(
      ctx, ex::then(stdexec::just(20) | stdexec::then([](int x) { return x + 1; }), [](int x) { return x * 2; }));
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<0>(*r), 42);
  auto both =
      ex::sync_wait(ctx, ex::when_all(stdexec::just(1), ex::just(2), ex::sleep_for(1ms) | ex::then([] { return 3; })));
  ASSERT_TRUE(both);
  EXPECT_EQ(*both, std::make_tuple(1, 2, 3));
  auto chained = ex::sync_wait(ctx, ex::let_value(stdexec::just(5), [](int n) { return ex::just(n * 3); }));
  ASSERT_TRUE(chained);
  EXPECT_EQ(std::get<0>(*chained), 15);
}

TEST(StdexecInterop, ExecWhenAnyCancelsAPendingRingioRecv) {
  io_context ctx;
  socket_pair p;
  std::array<char, 64> in{};
  auto t0 = std::chrono::steady_clock::now();
  // The recv waits (no data); the timer completes first and exec::when_any stops the
  // recv through its inplace_stop_token: ASYNC_CANCEL, and the recv ends stopped.
  auto r = ex::sync_wait(ctx, ::exec::when_any(ex::recv(p.a, std::as_writable_bytes(std::span(in))),
                                               ex::sleep_for(10ms) | ex::then([] { return std::size_t{999}; })));
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<0>(*r), 999u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(ctx.in_flight(), 0u);
  // Nothing was lost: data sent now is there for the next receive.
  send_text(p.b.native_handle(), "kept");
  auto again = ex::sync_wait(ctx, ex::recv(p.a, std::as_writable_bytes(std::span(in))));
  ASSERT_TRUE(again);
  EXPECT_EQ(std::string(in.data(), std::get<0>(*again)), "kept");
}

// Senders whose completions depend on their receiver's environment, in ringio's
// algorithms and consumed by stdexec through them.
TEST(StdexecInterop, EnvironmentDependentStdexecSendersInRingioAlgorithms) {
  io_context ctx;
  const ex::scheduler home(ctx);
  auto sched = ex::sync_wait(ctx, ex::when_all(stdexec::read_env(stdexec::get_scheduler), ex::just(1)));
  ASSERT_TRUE(sched);
  EXPECT_EQ(*sched, std::make_tuple(home, 1));
  auto then = ex::sync_wait(
      ctx, ex::then(stdexec::read_env(stdexec::get_scheduler), [&](ex::scheduler s) { return s == home; }));
  ASSERT_TRUE(then);
  EXPECT_TRUE(std::get<0>(*then));
  // when_any's children see its own stop token, which can stop.
  auto token = ex::sync_wait(ctx, ex::when_any(stdexec::read_env(stdexec::get_stop_token) |
                                               stdexec::then([](auto t) { return t.stop_possible(); })));
  ASSERT_TRUE(token);
  EXPECT_TRUE(std::get<0>(*token));
  auto read_sched = [](int) { return stdexec::read_env(stdexec::get_scheduler); };
  auto chained = ex::sync_wait(ctx, ex::let_value(ex::just(2), read_sched) | ex::continues_on(home));
  ASSERT_TRUE(chained);
  EXPECT_EQ(std::get<0>(*chained), home);
  // stdexec's sync_wait consuming ringio's starts_on: the child sees the loop's scheduler.
  loop_thread loop;
  auto started = stdexec::sync_wait(ex::starts_on(ex::scheduler(loop.ctx), stdexec::read_env(stdexec::get_scheduler)));
  ASSERT_TRUE(started);
  EXPECT_EQ(std::get<0>(*started), ex::scheduler(loop.ctx));
}

task<bool> await_environment_readers() {
  auto sched = co_await stdexec::read_env(stdexec::get_scheduler);
  EXPECT_TRUE(sched);
  // The task's stop token reaches senders as an inplace_stop_token.
  auto possible = co_await (stdexec::read_env(stdexec::get_stop_token) | stdexec::then([](auto t) {
                              static_assert(std::is_same_v<decltype(t), stdexec::inplace_stop_token>);
                              return t.stop_possible();
                            }));
  EXPECT_TRUE(possible);
  co_return sched&&* sched == ex::scheduler(*io_context::current()) && possible&&* possible;
}

TEST(StdexecInterop, TasksAwaitEnvironmentDependentStdexecSenders) {
  io_context ctx;
  auto r = sync_wait(ctx, with_timeout(await_environment_readers(), 10s));  // a task that can be stopped
  ASSERT_TRUE(r);
  EXPECT_TRUE(*r);
}

task<std::size_t> await_stdexec_then_ringio(stream_socket& s, std::array<char, 64>& in) {
  auto v = co_await (stdexec::just(3) | stdexec::then([](int x) { return x + 1; }));
  EXPECT_TRUE(v);
  EXPECT_EQ(v ? *v : 0, 4);
  auto n = co_await ex::recv(s, std::as_writable_bytes(std::span(in)));
  co_return n ? *n : 0;
}

TEST(StdexecInterop, TasksAwaitStdexecSenders) {
  io_context ctx;
  socket_pair p;
  send_text(p.b.native_handle(), "abc");
  std::array<char, 64> in{};
  auto n = sync_wait(ctx, await_stdexec_then_ringio(p.a, in));
  EXPECT_EQ(n, 3u);
}

#else

TEST(StdexecInterop, SkippedWithoutStdexec) {
  GTEST_SKIP() << "stdexec was not given: configure with -DRINGIO_STDEXEC_DIR=/path/to/stdexec "
                  "(a checkout, or its include directory) to build and run the stdexec interop tests";
}

#endif

}  // namespace
