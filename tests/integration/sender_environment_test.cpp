// SPDX-License-Identifier: Apache-2.0
// What senders see and what happens when things go wrong around them, on every
// backend: children get their receiver's environment (in algorithms and in co_await,
// where a sender may complete inside the task's stop request), a connect that throws
// reaches the task or the caller without leaking the children already connected, and
// a context destroyed on a foreign thread with senders pending is refused loudly.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <tuple>
#include <utility>

#include "ringio/exec.hpp"
#include "ringio/ringio.hpp"
#include "sender_support.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
namespace ex = ringio::exec;

namespace {

class SenderEnvironment : public backend_test {};

// Completes with what its receiver's environment answers to `Query`: its completions
// depend on that environment.
template <class Query>
struct read_env_sender {
  using sender_concept = ex::sender_t;
  template <class Env>
  auto get_completion_signatures(const Env&) const
      -> ex::completion_signatures<ex::set_value_t(decltype(std::declval<const Env&>().query(Query{})))> {
    return {};
  }
  template <class R>
  struct op {
    using operation_state_concept = ex::operation_state_t;
    R rcvr;
    void start() & noexcept {
      auto v = ex::get_env(rcvr).query(Query{});
      std::move(rcvr).set_value(std::move(v));
    }
  };
  template <class R>
  op<std::decay_t<R>> connect(R&& r) && {
    return {std::forward<R>(r)};
  }
};

// Completes with whether its environment's stop token may stop, and whether it was
// requested.
struct stop_state_sender {
  using sender_concept = ex::sender_t;
  using completion_signatures = ex::completion_signatures<ex::set_value_t(bool, bool)>;
  template <class R>
  struct op {
    using operation_state_concept = ex::operation_state_t;
    R rcvr;
    void start() & noexcept {
      auto token = ex::get_stop_token(ex::get_env(rcvr));
      std::move(rcvr).set_value(token.stop_possible(), token.stop_requested());
    }
  };
  template <class R>
  op<std::decay_t<R>> connect(R&& r) && {
    return {std::forward<R>(r)};
  }
};

// Completes with set_stopped() from inside its stop callback, on the thread that
// requested the stop.
struct stopped_by_callback_sender {
  using sender_concept = ex::sender_t;
  using completion_signatures = ex::completion_signatures<ex::set_stopped_t()>;
  template <class R>
  struct op {
    using operation_state_concept = ex::operation_state_t;
    struct on_stop {
      op* self;
      void operator()() const noexcept { std::move(self->rcvr).set_stopped(); }
    };
    R rcvr;
    std::optional<ex::stop_callback_for_t<ex::stop_token_of_t<ex::env_of_t<R>>, on_stop>> cb;
    void start() & noexcept { cb.emplace(ex::get_stop_token(ex::get_env(rcvr)), on_stop{this}); }
  };
  template <class R>
  op<std::decay_t<R>> connect(R&& r) && {
    return {std::forward<R>(r), std::nullopt};
  }
};

task<bool> await_stopped_by_callback() {
  auto r = co_await stopped_by_callback_sender{};
  co_return !r && r.error() == std::errc::operation_canceled;
}

// Completes with set_value(); counts its live operation states. Its connect throws
// when `fail` is set.
struct counted_sender {
  using sender_concept = ex::sender_t;
  using completion_signatures = ex::completion_signatures<ex::set_value_t(), ex::set_stopped_t()>;
  int* live;
  bool fail = false;
  template <class R>
  struct op {
    using operation_state_concept = ex::operation_state_t;
    R rcvr;
    int* live;
    op(R r, int* l) : rcvr(std::move(r)), live(l) { ++*live; }
    op(const op&) = delete;
    ~op() { --*live; }
    void start() & noexcept { std::move(rcvr).set_value(); }
  };
  template <class R>
  op<std::decay_t<R>> connect(R&& r) && {
    if (fail) throw std::runtime_error("connect failed");
    return {std::forward<R>(r), live};
  }
};

TEST_P(SenderEnvironment, AwaitedSendersSeeTheTasksSchedulerAndStopToken) {
  ex::scheduler home(ctx());
  auto sched = run([]() -> task<ex::scheduler> { co_return *co_await read_env_sender<ex::get_scheduler_t>{}; }());
  EXPECT_EQ(sched, home);
  // A task that cannot be stopped gives a token that cannot stop.
  auto plain = run([]() -> task<std::tuple<bool, bool>> { co_return *co_await stop_state_sender{}; }());
  EXPECT_EQ(plain, std::make_tuple(false, false));
  // The token the sender sees is stopped when the task's is.
  std::stop_source stop;
  auto seen = ex::sync_wait(ctx(), with_token(ex::from_task([](std::stop_source& stop) -> task<bool> {
                                                auto before = *co_await stop_state_sender{};
                                                stop.request_stop();
                                                auto after = *co_await stop_state_sender{};
                                                co_return before == std::make_tuple(true, false) &&
                                                    after == std::make_tuple(true, true);
                                              }(stop)),
                                              stop.get_token()));
  ASSERT_TRUE(seen);
  EXPECT_TRUE(std::get<0>(*seen));
}

// The sender completes inside the stop request of the task's token, and the task that
// awaited it ends (its frame, with the awaiter, is freed) before that request returns.
TEST_P(SenderEnvironment, ASenderStoppedInsideItsStopCallbackResumesTheTaskSafely) {
  for (int i = 0; i < 20; ++i) {
    std::stop_source stop;
    auto r = ex::sync_wait(
        ctx(),
        ex::when_all(with_token(ex::from_task([]() -> task<bool> { co_return co_await await_stopped_by_callback(); }()),
                                stop.get_token()),
                     ex::yield() | ex::then([&] { stop.request_stop(); })));
    ASSERT_TRUE(r);
    EXPECT_TRUE(std::get<0>(*r));
  }
}

TEST_P(SenderEnvironment, AlgorithmsGiveChildrenTheReceiversEnvironment) {
  ex::scheduler home(ctx());
  auto r = ex::sync_wait(ctx(), ex::when_all(read_env_sender<ex::get_scheduler_t>{}, ex::just(7)));
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<0>(*r), home);
  EXPECT_EQ(std::get<1>(*r), 7);
  auto any = ex::sync_wait(ctx(), ex::when_any(read_env_sender<ex::get_scheduler_t>{}));
  ASSERT_TRUE(any);
  EXPECT_EQ(std::get<0>(*any), home);
  auto chained =
      ex::sync_wait(ctx(), ex::just(1) | ex::let_value([](int) { return read_env_sender<ex::get_scheduler_t>{}; }) |
                               ex::then([](ex::scheduler s) { return s; }) | ex::continues_on(home));
  ASSERT_TRUE(chained);
  EXPECT_EQ(std::get<0>(*chained), home);
  auto started = ex::sync_wait(ctx(), ex::starts_on(home, read_env_sender<ex::get_scheduler_t>{}));
  ASSERT_TRUE(started);
  EXPECT_EQ(std::get<0>(*started), home);
}

TEST_P(SenderEnvironment, AConnectThatThrowsThrowsFromTheCoAwait) {
  int live = 0;
  auto caught = run([](int* live) -> task<bool> {
    try {
      (void)co_await counted_sender{live, true};
    } catch (const std::runtime_error&) {
      co_return true;
    }
    co_return false;
  }(&live));
  EXPECT_TRUE(caught);
  EXPECT_EQ(live, 0);
  // The task goes on awaiting afterwards.
  auto again = run([](int* live) -> task<bool> { co_return bool(co_await counted_sender{live}); }(&live));
  EXPECT_TRUE(again);
  EXPECT_EQ(live, 0);
}

TEST_P(SenderEnvironment, AdaptorsDestroyTheChildrenConnectedBeforeAConnectThrows) {
  int live = 0;
  EXPECT_THROW(
      ex::sync_wait(ctx(), ex::when_all(counted_sender{&live}, counted_sender{&live}, counted_sender{&live, true})),
      std::runtime_error);
  EXPECT_EQ(live, 0);
  EXPECT_THROW(ex::sync_wait(ctx(), ex::when_any(counted_sender{&live}, counted_sender{&live, true})),
               std::runtime_error);
  EXPECT_EQ(live, 0);
  EXPECT_THROW(ex::sync_wait(ctx(), ex::starts_on(ex::scheduler(ctx()), counted_sender{&live, true})),
               std::runtime_error);
  EXPECT_THROW(ex::sync_wait(ctx(), ex::continues_on(counted_sender{&live, true}, ex::scheduler(ctx()))),
               std::runtime_error);
  EXPECT_EQ(live, 0);
  // Nothing connected stays behind: the same senders run to completion afterwards.
  EXPECT_TRUE(ex::sync_wait(ctx(), ex::when_all(counted_sender{&live}, counted_sender{&live})));
  EXPECT_EQ(live, 0);
}

RINGIO_ALL_BACKENDS(SenderEnvironment);

class SenderEnvironmentDeathTest : public ::testing::TestWithParam<backend_kind> {};

// A sender pending on a loop whose context is destroyed on another thread could never
// complete: the destruction is refused (the program ends with a message) rather than
// leave a sync_wait elsewhere waiting forever.
TEST_P(SenderEnvironmentDeathTest, ContextDestroyedOnAnotherThreadWithAPendingSender) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  try {
    io_context probe(io_context_options{.backend = GetParam(), .quiet = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here: " << e.what();
  }
  EXPECT_DEATH(
      {
        auto other = std::make_unique<io_context>(io_context_options{.backend = GetParam(), .quiet = true});
        std::thread runner([&] { other->run(); });
        std::atomic<bool> started{false};
        std::thread waiter([&] {
          io_context home(io_context_options{.backend = GetParam(), .quiet = true});
          // when_all starts its children in order: the sleep is in flight on `other`
          // when `started` is set.
          auto mark = ex::just() | ex::then([&] { started = true; });
          ex::sync_wait(home, ex::starts_on(ex::scheduler(*other), ex::when_all(ex::sleep_for(1h), std::move(mark))));
        });
        waiter.detach();
        while (!started) std::this_thread::yield();
        other->stop();
        runner.join();
        other.reset();  // on this thread, not the one that ran it
        std::fprintf(stderr, "destroyed\n");
      },
      "destroyed on a thread other than the one that ran it");
}

INSTANTIATE_TEST_SUITE_P(, SenderEnvironmentDeathTest,
                         ::testing::Values(backend_kind::uring, backend_kind::epoll, backend_kind::uring_poll),
                         backend_param_name);

}  // namespace
