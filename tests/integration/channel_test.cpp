// channel<T>: many sender threads, one receiving task; exact counts under contention,
// sleeping receivers woken, cancellation of a waiting receive.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class Channel : public backend_test {};

TEST_P(Channel, MillionsOfMessagesFromManyThreadsArriveExactlyOnce) {
  constexpr int producers = 4;
  constexpr long per_producer = 500'000;
  channel<long> ch(1024);
  std::vector<std::thread> ts;
  std::atomic<bool> go{false};
  for (int p = 0; p < producers; ++p)
    ts.emplace_back([&, p] {
      while (!go) std::this_thread::yield();
      for (long i = 0; i < per_producer; ++i)
        while (!ch.try_send(p * per_producer + i)) std::this_thread::yield();
    });
  go = true;
  auto [count, sum] = run([](channel<long>& ch) -> task<std::pair<long, long>> {
    long count = 0, sum = 0;
    while (count < producers * per_producer) {
      auto v = co_await ch.receive();
      if (!v) break;
      ++count;
      sum += *v;
    }
    co_return std::pair{count, sum};
  }(ch));
  for (auto& t : ts) t.join();
  long n = producers * per_producer;
  EXPECT_EQ(count, n);
  EXPECT_EQ(sum, n * (n - 1) / 2);
}

TEST_P(Channel, SleepingReceiverIsWokenBySenderThread) {
  channel<int> ch(16);
  std::thread sender([&] {
    for (int i = 0; i < 20; ++i) {
      std::this_thread::sleep_for(2ms);  // the receiver falls asleep in between
      while (!ch.try_send(i)) std::this_thread::yield();
    }
  });
  auto got = run([](channel<int>& ch) -> task<std::vector<int>> {
    std::vector<int> got;
    for (int i = 0; i < 20; ++i) {
      auto v = co_await ch.receive();
      if (!v) break;
      got.push_back(*v);
    }
    co_return got;
  }(ch));
  sender.join();
  ASSERT_EQ(got.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(got[i], i);
}

TEST_P(Channel, WaitingReceiveIsCancelledByItsStopToken) {
  channel<int> ch(4);
  std::stop_source src;
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    src.request_stop();
  });
  auto r = run([](channel<int>& ch, std::stop_token t) -> task<result<int>> { co_return co_await ch.receive(t); }(ch, src.get_token()));
  stopper.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::operation_canceled);
  // The channel still works afterwards.
  ASSERT_TRUE(ch.try_send(5));
  auto v = run([](channel<int>& ch) -> task<result<int>> { co_return co_await ch.receive(); }(ch));
  EXPECT_EQ(v.value_or(-1), 5);
}

TEST_P(Channel, SendWaitsWhileFull) {
  channel<int> ch(2);
  auto received = run([](channel<int>& ch) -> task<std::vector<int>> {
    std::vector<int> got;
    auto producer = [](channel<int>& ch) -> task<void> {
      for (int i = 0; i < 50; ++i) {
        auto s = co_await ch.send(i);
        EXPECT_TRUE(s);
      }
    };
    auto consumer = [](channel<int>& ch, std::vector<int>& got) -> task<void> {
      while (got.size() < 50) {
        auto v = co_await ch.receive();
        if (!v) break;
        got.push_back(*v);
      }
    };
    co_await when_all(producer(ch), consumer(ch, got));
    co_return got;
  }(ch));
  ASSERT_EQ(received.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(received[i], i);
}

RINGIO_ALL_BACKENDS(Channel);

TEST(ChannelAcrossLoops, LoopsHandWorkToEachOther) {
  runtime rt({.threads = 2});
  channel<int> ch(64);
  std::atomic<long> sum{0};
  rt.run_on_each([&](io_context&, unsigned i) -> task<void> {
    if (i == 0) {
      for (int k = 1; k <= 10'000; ++k) {
        auto s = co_await ch.send(k);
        EXPECT_TRUE(s);
      }
      auto s = co_await ch.send(-1);
      EXPECT_TRUE(s);
    } else {
      for (;;) {
        auto v = co_await ch.receive();
        if (!v || *v < 0) break;
        sum += *v;
      }
    }
  });
  EXPECT_EQ(sum.load(), 10'000L * 10'001 / 2);
}

}  // namespace
