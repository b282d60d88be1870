// SPDX-License-Identifier: Apache-2.0
// The synchronisation primitives awaited from fibers (this_fiber::await): fibers and
// tasks contend for one mutex, a fiber sends into a full channel, a fiber waits for an
// event set by a task, and a stopped fiber's wait is cancelled.
#include <gtest/gtest.h>

#include <vector>

#include "ringio/fiber.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class SyncFiber : public backend_test {};

TEST_P(SyncFiber, FibersAndTasksShareAMutexInFifoOrder) {
  auto order = run([]() -> task<std::vector<int>> {
    mutex m;
    std::vector<int> order;
    int inside = 0;
    scope sc;
    for (int i = 0; i < 6; ++i) {
      if (i % 2 == 0) {
        spawn_fiber(sc, [&m, &order, &inside, i] {
          auto g = this_fiber::await(m.lock());
          EXPECT_TRUE(g);
          EXPECT_EQ(++inside, 1);
          order.push_back(i);
          this_fiber::await(yield());
          --inside;
        });
      } else {
        sc.spawn([](mutex& m, std::vector<int>& order, int& inside, int i) -> task<void> {
          auto g = co_await m.lock();
          EXPECT_TRUE(g);
          EXPECT_EQ(++inside, 1);
          order.push_back(i);
          co_await yield();
          --inside;
        }(m, order, inside, i));
      }
    }
    co_await sc.join();
    EXPECT_FALSE(m.is_locked());
    co_return order;
  }());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST_P(SyncFiber, AFiberSendsIntoAFullChannelAndWaitsForAnEvent) {
  auto got = run([]() -> task<std::vector<int>> {
    channel<int> ch(2);
    event go;
    scope sc;
    spawn_fiber(sc, [&ch, &go] {
      auto w = this_fiber::await(go.wait());
      EXPECT_TRUE(w);
      for (int i = 0; i < 20; ++i) {
        auto s = this_fiber::await(ch.send(i));  // waits while full
        EXPECT_TRUE(s);
      }
      ch.close();
    });
    co_await yield();
    go.set();
    std::vector<int> got;
    for (;;) {
      auto v = co_await ch.receive();
      if (!v) break;
      got.push_back(*v);
    }
    co_await sc.join();
    co_return got;
  }());
  ASSERT_EQ(got.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(got[i], i);
}

TEST_P(SyncFiber, AStoppedFiberLeavesTheSemaphoreQueue) {
  run([]() -> task<void> {
    semaphore s(0);
    bool cancelled = false;
    scope sc;
    spawn_fiber(sc, [&s, &cancelled] {
      auto a = this_fiber::await(s.acquire());
      cancelled = !a && a.error() == std::errc::operation_canceled;
    });
    co_await yield();
    sc.request_stop();
    co_await sc.join();
    EXPECT_TRUE(cancelled);
    s.release();
    EXPECT_EQ(s.available(), 1u);
  }());
}

RINGIO_ALL_BACKENDS(SyncFiber);

}  // namespace
