// SPDX-License-Identifier: Apache-2.0
// Adversarial: senders. Connects that throw inside let_value / repeat_until / nested
// algorithms / co_await of algorithms; environment-dependent senders inside co_await of
// algorithms; exec::yield() in loops; io_contexts destroyed on another thread with
// other kinds of pending work (a task awaiting a sender, a plain task, a schedule()).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "ringio/exec.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
namespace ex = ringio::exec;

namespace {

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

class AdversarialSenders : public backend_test {};

TEST_P(AdversarialSenders, LetValueWhoseNextConnectThrowsIsAnError) {
  int live = 0;
  EXPECT_THROW(ex::sync_wait(ctx(), ex::just(1) | ex::let_value([&](int) {
                                      return counted_sender{&live, true};
                                    })),
               std::runtime_error);
  EXPECT_EQ(live, 0);
  EXPECT_THROW(ex::sync_wait(ctx(), counted_sender{&live} | ex::let_value([&] {
                                      return counted_sender{&live, true};
                                    })),
               std::runtime_error);
  EXPECT_EQ(live, 0);
}

TEST_P(AdversarialSenders, RepeatUntilRoundConnectThrowsIsAnError) {
  int live = 0;
  int rounds = 0;
  EXPECT_THROW(ex::sync_wait(ctx(), ex::repeat_until([&] {
                               ++rounds;
                               return counted_sender{&live, rounds == 3} | ex::then([] { return false; });
                             })),
               std::runtime_error);
  EXPECT_EQ(rounds, 3);
  EXPECT_EQ(live, 0);
}

TEST_P(AdversarialSenders, NestedAlgorithmsDestroyConnectedChildrenWhenALaterConnectThrows) {
  int live = 0;
  EXPECT_THROW(ex::sync_wait(ctx(), ex::when_all(ex::when_all(counted_sender{&live}, counted_sender{&live}),
                                                 ex::when_any(counted_sender{&live}, counted_sender{&live, true}))),
               std::runtime_error);
  EXPECT_EQ(live, 0);
  EXPECT_THROW(ex::sync_wait(ctx(), ex::when_any(ex::starts_on(ex::scheduler(ctx()), counted_sender{&live}),
                                                 ex::continues_on(counted_sender{&live, true}, ex::scheduler(ctx())))),
               std::runtime_error);
  EXPECT_EQ(live, 0);
}

TEST_P(AdversarialSenders, CoAwaitOfAnAlgorithmWhoseChildConnectThrows) {
  int live = 0;
  auto caught = run([](int* live) -> task<int> {
    int n = 0;
    try {
      (void)co_await ex::when_all(counted_sender{live}, counted_sender{live, true});
    } catch (const std::runtime_error&) {
      ++n;
    }
    try {
      (void)co_await (ex::just() | ex::let_value([live] { return counted_sender{live, true}; }));
    } catch (const std::runtime_error&) {
      ++n;
    }
    co_return n;
  }(&live));
  EXPECT_EQ(caught, 2);
  EXPECT_EQ(live, 0);
}

TEST_P(AdversarialSenders, EnvironmentDependentSendersInsideAwaitedAlgorithms) {
  ex::scheduler home(ctx());
  auto got = run([]() -> task<std::tuple<bool, bool, bool, bool>> {
    auto a = co_await ex::when_all(read_env_sender<ex::get_scheduler_t>{}, ex::just(1));
    auto b = co_await ex::when_any(read_env_sender<ex::get_scheduler_t>{});
    auto c = co_await (ex::just() | ex::let_value([] { return read_env_sender<ex::get_scheduler_t>{}; }));
    auto d = co_await ex::when_all(read_env_sender<ex::get_stop_token_t>{});
    co_return std::tuple<bool, bool, bool, bool>{bool(a), bool(b), bool(c), bool(d)};
  }());
  EXPECT_EQ(got, std::make_tuple(true, true, true, true));
  auto sched = run([]() -> task<std::optional<ex::scheduler>> {
    auto a = co_await ex::when_all(read_env_sender<ex::get_scheduler_t>{}, ex::yield());
    if (!a) co_return std::nullopt;
    co_return *a;
  }());
  ASSERT_TRUE(sched);
  EXPECT_EQ(*sched, home);
}

TEST_P(AdversarialSenders, YieldInLongLoopsAndInsideAlgorithms) {
  int n = 0;
  auto r =
      ex::sync_wait(ctx(), ex::repeat_until([&] { return ex::yield() | ex::then([&] { return ++n == 100000; }); }));
  ASSERT_TRUE(r);
  EXPECT_EQ(n, 100000);
  // yield racing a stop: when_any of yield and a never-ending recv.
  socket_pair p;
  std::array<std::byte, 4> buf{};
  for (int i = 0; i < 100; ++i) {
    auto w =
        ex::sync_wait(ctx(), ex::when_any(ex::yield() | ex::then([] { return std::size_t{0}; }), ex::recv(p.a, buf)));
    ASSERT_TRUE(w);
  }
  int k = run([]() -> task<int> {
    int k = 0;
    for (int i = 0; i < 10000; ++i)
      if (co_await ex::yield()) ++k;
    co_return k;
  }());
  EXPECT_EQ(k, 10000);
}

RINGIO_ALL_BACKENDS(AdversarialSenders);

// A context that was never run, with a schedule() from another thread queued in its
// inbox, destroyed: "(or never run) ... cancels what is pending and runs until it has
// all completed": the waiter elsewhere must get a completion, not hang.
TEST(AdversarialSendersTeardown, NeverRunContextWithQueuedScheduleCompletesTheWaiter) {
  auto target = std::make_unique<io_context>(io_context_options{.quiet = true});
  std::atomic<int> outcome{-1};  // 0 stopped, 1 value, 2 exception
  std::atomic<bool> queued{false};
  std::thread waiter([&] {
    io_context home(io_context_options{.quiet = true});
    try {
      auto mark = ex::just() | ex::then([&] { queued = true; });
      auto r = ex::sync_wait(home, ex::when_all(std::move(mark), ex::starts_on(ex::scheduler(*target), ex::just(5))));
      outcome = r ? 1 : 0;
    } catch (...) {
      outcome = 2;
    }
  });
  while (!queued) std::this_thread::yield();
  std::this_thread::sleep_for(20ms);
  target.reset();  // never run; destroyed on the thread that made it
  for (int i = 0; i < 300 && outcome.load() < 0; ++i) std::this_thread::sleep_for(10ms);
  if (outcome.load() < 0) {
    std::fprintf(stderr, "the waiter never got a completion: aborting\n");
    std::abort();
  }
  waiter.join();
  std::printf("outcome %d\n", outcome.load());
}

class AdversarialSendersDeathTest : public ::testing::TestWithParam<backend_kind> {};

// A plain task awaiting a sender (a recv that never completes) on a loop destroyed on
// another thread.
TEST_P(AdversarialSendersDeathTest, TaskAwaitingASenderOnAContextDestroyedElsewhere) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  try {
    io_context probe(io_context_options{.backend = GetParam(), .quiet = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "cannot start";
  }
  EXPECT_DEATH(
      {
        ::alarm(5);  // a hang dies by SIGALRM, without the message
        socket_pair p;
        auto other = std::make_unique<io_context>(io_context_options{.backend = GetParam(), .quiet = true});
        std::atomic<bool> started{false};
        std::thread runner([&] {
          other->spawn([](stream_socket& s, std::atomic<bool>& started) -> task<void> {
            std::array<std::byte, 4> buf{};
            started = true;
            (void)co_await ex::recv(s, buf);
          }(p.a, started));
          other->run();
        });
        while (!started) std::this_thread::yield();
        std::this_thread::sleep_for(20ms);
        other->stop();
        runner.join();
        other.reset();
        std::fprintf(stderr, "destroyed\n");
      },
      "destroyed on a thread other than the one that ran it");
}

// A schedule() queued in the inbox of a stopped loop, destroyed on another thread.
TEST_P(AdversarialSendersDeathTest, QueuedScheduleOnAContextDestroyedElsewhere) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  try {
    io_context probe(io_context_options{.backend = GetParam(), .quiet = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "cannot start";
  }
  EXPECT_DEATH(
      {
        ::alarm(5);
        auto other = std::make_unique<io_context>(io_context_options{.backend = GetParam(), .quiet = true});
        std::thread runner([&] { other->run(); });
        other->stop();
        runner.join();  // stopped: nothing runs its inbox any more
        std::atomic<bool> queued{false};
        std::thread waiter([&] {
          io_context home(io_context_options{.backend = GetParam(), .quiet = true});
          auto mark = ex::just() | ex::then([&] { queued = true; });
          ex::sync_wait(home, ex::when_all(std::move(mark), ex::starts_on(ex::scheduler(*other), ex::just())));
        });
        waiter.detach();
        while (!queued) std::this_thread::yield();
        std::this_thread::sleep_for(50ms);
        other.reset();
        std::fprintf(stderr, "destroyed\n");
      },
      "destroyed on a thread other than the one that ran it");
}

INSTANTIATE_TEST_SUITE_P(, AdversarialSendersDeathTest,
                         ::testing::Values(backend_kind::uring, backend_kind::epoll, backend_kind::uring_poll),
                         backend_param_name);

}  // namespace
