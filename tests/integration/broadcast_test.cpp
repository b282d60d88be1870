// SPDX-License-Identifier: Apache-2.0
// broadcast<T>: every receiver sees every value in order, a slow receiver is told how
// many values it missed and continues, close drains, waits are cancellable and safe in
// when_any.
#include <gtest/gtest.h>

#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class Broadcast : public backend_test {};

TEST_P(Broadcast, EveryReceiverGetsEveryValueInOrder) {
  run([]() -> task<void> {
    broadcast<int> b(8);
    std::vector<std::vector<int>> got(3);
    auto reader = [](broadcast<int>::receiver r, std::vector<int>& out) -> task<void> {
      for (;;) {
        auto v = co_await r.receive();
        if (!v) {
          EXPECT_EQ(v.error(), errc::closed);
          co_return;
        }
        out.push_back(*v);
      }
    };
    scope sc;
    for (auto& g : got) sc.spawn(reader(b.subscribe(), g));
    for (int i = 0; i < 100; ++i) {
      auto s = b.send(i);
      EXPECT_TRUE(s);
      if (i % 4 == 3) co_await yield();  // readers keep up: at most 4 behind
    }
    b.close();
    co_await sc.join();
    std::vector<int> all(100);
    for (int i = 0; i < 100; ++i) all[i] = i;
    for (auto& g : got) EXPECT_EQ(g, all);
    auto late = b.send(1);
    EXPECT_FALSE(late);
    EXPECT_EQ(late.error(), errc::closed);
  }());
}

TEST_P(Broadcast, ASubscriberSeesOnlyLaterValues) {
  run([]() -> task<void> {
    broadcast<int> b(4);
    (void)b.send(1);
    auto r = b.subscribe();
    (void)b.send(2);
    auto v = co_await r.receive();
    EXPECT_EQ(v.value_or(-1), 2);
    EXPECT_EQ(r.try_receive().error(), std::errc::resource_unavailable_try_again);
  }());
}

TEST_P(Broadcast, ASlowReceiverLearnsHowManyItMissedAndContinues) {
  run([]() -> task<void> {
    broadcast<std::shared_ptr<const std::string>> b(4);
    auto slow = b.subscribe();
    for (int i = 0; i < 10; ++i) (void)b.send(std::make_shared<const std::string>(std::to_string(i)));
    EXPECT_EQ(slow.pending(), 10u);
    auto lag = co_await slow.receive();
    EXPECT_FALSE(lag);
    EXPECT_EQ(lag.error(), errc::lagged);
    EXPECT_EQ(slow.missed(), 6u);
    for (int i = 6; i < 10; ++i) {
      auto v = co_await slow.receive();
      EXPECT_TRUE(v);
      if (v) {
        EXPECT_EQ(**v, std::to_string(i));
      }
    }
    b.close();
    auto end = co_await slow.receive();
    EXPECT_EQ(end.error(), errc::closed);
  }());
}

TEST_P(Broadcast, CloseLetsReceiversDrainFirst) {
  run([]() -> task<void> {
    broadcast<int> b(4);
    auto r = b.subscribe();
    (void)b.send(7);
    (void)b.send(8);
    b.close();
    auto a = co_await r.receive();
    auto c = co_await r.receive();
    auto d = co_await r.receive();
    EXPECT_EQ(a.value_or(-1), 7);
    EXPECT_EQ(c.value_or(-1), 8);
    EXPECT_EQ(d.error(), errc::closed);
  }());
}

TEST_P(Broadcast, WaitingReceiveIsCancelledAndTimesOut) {
  run([]() -> task<void> {
    broadcast<int> b(4);
    auto r = b.subscribe();
    auto t = co_await with_timeout(r.receive(), 5ms);
    EXPECT_FALSE(t);
    EXPECT_EQ(t.error(), std::errc::timed_out);
    (void)b.send(3);  // still works afterwards
    auto v = co_await r.receive();
    EXPECT_EQ(v.value_or(-1), 3);
  }());
}

// when_any over two receivers: the losing branch takes nothing, so over many rounds
// each receiver still sees every value exactly once.
TEST_P(Broadcast, SelectOverTwoReceiversLosesNothing) {
  run([]() -> task<void> {
    broadcast<int> b1(64), b2(64);
    auto r1 = b1.subscribe();
    auto r2 = b2.subscribe();
    for (int i = 0; i < 20; ++i) {
      (void)b1.send(i);
      (void)b2.send(100 + i);
    }
    std::vector<int> from1, from2;
    for (int k = 0; k < 40; ++k) {
      auto w = co_await when_any(r1.receive(), r2.receive());
      if (w.index() == 0) {
        auto& v = std::get<0>(w);
        if (v) from1.push_back(*v);
      } else {
        auto& v = std::get<1>(w);
        if (v) from2.push_back(*v);
      }
    }
    EXPECT_EQ(from1.size() + from2.size(), 40u);
    for (std::size_t i = 0; i < from1.size(); ++i) EXPECT_EQ(from1[i], static_cast<int>(i));
    for (std::size_t i = 0; i < from2.size(); ++i) EXPECT_EQ(from2[i], 100 + static_cast<int>(i));
  }());
}

RINGIO_ALL_BACKENDS_AND_SIM(Broadcast);

}  // namespace
