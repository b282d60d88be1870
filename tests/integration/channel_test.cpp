// SPDX-License-Identifier: Apache-2.0
// channel<T>: many sender threads, one receiving task; exact counts under contention,
// sleeping receivers woken, cancellation of a waiting receive.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/seed.hpp"

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
  auto r = run([](channel<int>& ch, std::stop_token t) -> task<result<int>> { co_return co_await ch.receive(t); }(
                                                           ch, src.get_token()));
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

TEST_P(Channel, CloseDeliversWhatIsQueuedThenClosed) {
  channel<int> ch(8);
  EXPECT_TRUE(ch.try_send(1));
  EXPECT_TRUE(ch.try_send(2));
  EXPECT_EQ(ch.size(), 2u);
  ch.close();
  EXPECT_TRUE(ch.is_closed());
  EXPECT_FALSE(ch.try_send(3));
  run([](channel<int>& ch) -> task<void> {
    auto late = co_await ch.send(4);
    EXPECT_FALSE(late);
    EXPECT_EQ(late.error(), errc::closed);
    auto a = co_await ch.receive();
    auto b = co_await ch.receive();
    auto c = co_await ch.receive();
    EXPECT_EQ(a.value_or(-1), 1);
    EXPECT_EQ(b.value_or(-1), 2);
    EXPECT_FALSE(c);
    EXPECT_EQ(c.error(), errc::closed);
    EXPECT_EQ(ch.size(), 0u);
  }(ch));
}

TEST_P(Channel, CloseWakesAWaitingReceiverAndWaitingSenders) {
  channel<int> ch(2);
  run([](channel<int>& ch) -> task<void> {
    result<int> got = 0;
    auto receiver = [](channel<int>& ch, result<int>& got) -> task<void> { got = co_await ch.receive(); };
    scope sc;
    sc.spawn(receiver(ch, got));
    ch.close();
    co_await sc.join();
    EXPECT_EQ(got.error(), errc::closed);
  }(ch));
  channel<int> full(2);
  run([](channel<int>& ch) -> task<void> {
    EXPECT_TRUE(ch.try_send(1));
    EXPECT_TRUE(ch.try_send(2));
    int failed = 0;
    auto sender = [](channel<int>& ch, int& failed) -> task<void> {
      auto s = co_await ch.send(3);
      if (!s && s.error() == errc::closed) ++failed;
    };
    scope sc;
    sc.spawn(sender(ch, failed));
    sc.spawn(sender(ch, failed));
    co_await yield();
    ch.close();
    co_await sc.join();
    EXPECT_EQ(failed, 2);
    auto a = co_await ch.receive();
    auto b = co_await ch.receive();
    auto c = co_await ch.receive();
    EXPECT_EQ(a.value_or(-1), 1);
    EXPECT_EQ(b.value_or(-1), 2);
    EXPECT_EQ(c.error(), errc::closed);
  }(full));
}

TEST_P(Channel, TheLastSenderHandleClosesTheChannel) {
  channel<int> ch(8);
  {
    auto s1 = ch.make_sender();
    auto s2 = s1;
    EXPECT_TRUE(s1.try_send(1));
    { auto s3 = std::move(s2); }
    EXPECT_FALSE(ch.is_closed());
    EXPECT_TRUE(s1.try_send(2));
  }
  EXPECT_TRUE(ch.is_closed());
  auto got = run([](channel<int>& ch) -> task<std::vector<int>> {
    std::vector<int> got;
    for (;;) {
      auto v = co_await ch.receive();
      if (!v) {
        EXPECT_EQ(v.error(), errc::closed);
        break;
      }
      got.push_back(*v);
    }
    co_return got;
  }(ch));
  EXPECT_EQ(got, (std::vector<int>{1, 2}));
}

// A full channel's sender waits without polling: while the receiver sleeps 50 ms the
// loop goes round only a handful of times (polling with 50 us sleeps would spin ~1000).
TEST_P(Channel, AFullSendWaitsWithoutPolling) {
  channel<int> ch(2);
  auto iterations = run([](channel<int>& ch) -> task<std::uint64_t> {
    EXPECT_TRUE(ch.try_send(0));
    EXPECT_TRUE(ch.try_send(1));
    auto* loop = io_context::current();
    const std::uint64_t before = loop->stats().iterations;
    bool sent = false;
    auto sender = [](channel<int>& ch, bool& sent) -> task<void> {
      auto s = co_await ch.send(2);
      sent = s.has_value();
    };
    scope sc;
    sc.spawn(sender(ch, sent));
    auto z = co_await sleep_for(50ms);
    EXPECT_TRUE(z);
    EXPECT_FALSE(sent);
    const std::uint64_t during = loop->stats().iterations - before;
    auto v = co_await ch.receive();
    EXPECT_EQ(v.value_or(-1), 0);
    co_await sc.join();
    EXPECT_TRUE(sent);
    EXPECT_EQ(ch.size(), 2u);
    co_return during;
  }(ch));
  EXPECT_LT(iterations, 20u);
}

TEST_P(Channel, AWaitingSendIsCancelledAndSendsNothing) {
  channel<int> ch(2);
  run([](channel<int>& ch) -> task<void> {
    EXPECT_TRUE(ch.try_send(0));
    EXPECT_TRUE(ch.try_send(1));
    auto s = co_await with_timeout(ch.send(2), 5ms);
    EXPECT_FALSE(s);
    EXPECT_EQ(s.error(), std::errc::timed_out);
    auto a = co_await ch.receive();
    auto b = co_await ch.receive();
    EXPECT_EQ(a.value_or(-1), 0);
    EXPECT_EQ(b.value_or(-1), 1);
    EXPECT_FALSE(ch.try_receive());
  }(ch));
}

// Two channels, when_any over both receives: the losing receive must not have taken a
// value, so every value arrives exactly once and in order per channel.
TEST_P(Channel, SelectOverTwoChannelsLosesNoValue) {
  channel<int> a(64), b(64);
  for (int i = 0; i < 30; ++i) {
    EXPECT_TRUE(a.try_send(i));
    EXPECT_TRUE(b.try_send(1000 + i));
  }
  auto [from_a, from_b] =
      run([](channel<int>& a, channel<int>& b) -> task<std::pair<std::vector<int>, std::vector<int>>> {
        std::vector<int> fa, fb;
        scope sc;
        auto late = [](channel<int>& a, channel<int>& b) -> task<void> {
          auto z = co_await sleep_for(5ms);  // some rounds find both empty and wait
          EXPECT_TRUE(z);
          for (int i = 30; i < 40; ++i) {
            EXPECT_TRUE(a.try_send(i));
            EXPECT_TRUE(b.try_send(1000 + i));
            co_await yield();
          }
        };
        sc.spawn(late(a, b));
        while (fa.size() + fb.size() < 80) {
          auto w = co_await when_any(a.receive(), b.receive());
          if (w.index() == 0) {
            auto& v = std::get<0>(w);
            EXPECT_TRUE(v);
            if (v) fa.push_back(*v);
          } else {
            auto& v = std::get<1>(w);
            EXPECT_TRUE(v);
            if (v) fb.push_back(*v);
          }
        }
        co_await sc.join();
        co_return std::pair{fa, fb};
      }(a, b));
  ASSERT_EQ(from_a.size(), 40u);
  ASSERT_EQ(from_b.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(from_a[i], i);
    EXPECT_EQ(from_b[i], 1000 + i);
  }
}

RINGIO_ALL_BACKENDS_AND_SIM(Channel);

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

// Senders on three loops and a plain thread fill a 4-slot channel far faster than the
// receiver takes values: they wait (as event operations) and are woken across threads.
TEST(ChannelAcrossLoops, FullSendersOnOtherLoopsAreWokenAndNothingIsLost) {
  constexpr int per_sender = 5'000;
  runtime rt({.threads = 4});
  channel<int> ch(4);
  std::atomic<long> sum{0}, count{0};
  std::atomic<int> senders_done{0};
  rt.run_on_each([&](io_context&, unsigned i) -> task<void> {
    if (i == 0) {
      while (count.load() < 3L * per_sender) {
        auto v = co_await ch.receive();
        if (!v) break;
        sum += *v;
        ++count;
      }
      co_return;
    }
    for (int k = 1; k <= per_sender; ++k) {
      auto s = co_await ch.send(k);
      EXPECT_TRUE(s);
    }
    ++senders_done;
  });
  EXPECT_EQ(senders_done.load(), 3);
  EXPECT_EQ(count.load(), 3L * per_sender);
  EXPECT_EQ(sum.load(), 3L * per_sender * (per_sender + 1) / 2);
}

// close() from another thread while the receiver waits and senders are blocked.
TEST(ChannelAcrossLoops, CloseFromAnotherThreadEndsEverybody) {
  runtime rt({.threads = 3});
  channel<int> ch(2);
  std::atomic<int> closed_seen{0};
  std::thread closer([&] {
    std::this_thread::sleep_for(30ms);
    ch.close();
  });
  rt.run_on_each([&](io_context&, unsigned i) -> task<void> {
    if (i == 0) {
      for (;;) {
        auto z = co_await sleep_for(10ms);  // slow receiver: the senders fill it
        EXPECT_TRUE(z);
        auto v = co_await ch.receive();
        if (!v) {
          EXPECT_EQ(v.error(), errc::closed);
          ++closed_seen;
          co_return;
        }
      }
    }
    for (;;) {
      auto s = co_await ch.send(static_cast<int>(i));
      if (!s) {
        EXPECT_EQ(s.error(), errc::closed);
        ++closed_seen;
        co_return;
      }
    }
  });
  closer.join();
  EXPECT_EQ(closed_seen.load(), 3);
}

// Senders on three loops wait on a 2-slot channel with random short timeouts, so their
// cancellations race the receiver's wake-ups from another thread. Every send that
// succeeded arrives exactly once; none that failed arrives.
TEST(ChannelAcrossLoops, SenderTimeoutsRacingWakesFromAnotherThreadLoseNothing) {
  const std::uint64_t seed = test_seed();
  constexpr int per_sender = 3'000;
  runtime rt({.threads = 4});
  channel<long> ch(2);
  std::vector<std::vector<long>> sent(4);
  std::vector<long> received;
  std::atomic<int> senders_done{0};
  rt.run_on_each([&](io_context&, unsigned i) -> task<void> {
    std::mt19937_64 rng(seed + i);
    if (i == 0) {
      for (;;) {
        auto v = co_await ch.receive();
        if (!v) break;
        received.push_back(*v);
        if (rng() % 64 == 0) {
          auto z = co_await sleep_for(std::chrono::microseconds(rng() % 200));
          (void)z;
        }
        if (senders_done.load() == 3 && ch.size() == 0) ch.close();
      }
      co_return;
    }
    for (long k = 0; k < per_sender; ++k) {
      const long v = static_cast<long>(i) * 1'000'000 + k;
      auto s = co_await with_timeout(ch.send(v), std::chrono::microseconds(rng() % 40));
      if (s) sent[i].push_back(v);
    }
    if (++senders_done == 3) {
      auto z = co_await sleep_for(1ms);  // the receiver may be waiting: closing wakes it
      (void)z;
      ch.close();
    }
  });
  std::size_t expected = 0;
  std::set<long> all_sent;
  for (auto& per : sent) {
    expected += per.size();
    all_sent.insert(per.begin(), per.end());
  }
  std::set<long> got(received.begin(), received.end());
  EXPECT_EQ(received.size(), expected) << "seed " << seed;
  EXPECT_EQ(got.size(), received.size()) << "duplicates, seed " << seed;
  EXPECT_EQ(got, all_sent) << "seed " << seed;
  EXPECT_LT(expected, 3u * per_sender) << "no send timed out: the race was not exercised";
}

}  // namespace
