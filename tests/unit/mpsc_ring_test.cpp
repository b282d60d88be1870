// SPDX-License-Identifier: Apache-2.0
#include "ringio/detail/mpsc_ring.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

using ringio::detail::mpsc_ring;

TEST(MpscRing, FifoAndCapacity) {
  mpsc_ring<int> q(3);  // rounded up to 4
  EXPECT_EQ(q.capacity(), 4u);
  for (int i = 0; i < 4; ++i) {
    int v = i;
    EXPECT_TRUE(q.try_push(v));
  }
  int extra = 99;
  EXPECT_FALSE(q.try_push(extra)) << "a full ring accepted a value";
  EXPECT_EQ(extra, 99) << "a refused value must be left intact";
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.try_pop(), std::optional<int>(i));
  EXPECT_EQ(q.try_pop(), std::nullopt);
}

TEST(MpscRing, MoveOnlyValuesAndDestructionOfLeftovers) {
  auto counter = std::make_shared<int>(0);
  {
    mpsc_ring<std::shared_ptr<int>> q(8);
    for (int i = 0; i < 5; ++i) {
      auto p = counter;
      ASSERT_TRUE(q.try_push(p));
    }
    EXPECT_EQ(counter.use_count(), 6);
    auto first = q.try_pop();
    ASSERT_TRUE(first);
  }
  EXPECT_EQ(counter.use_count(), 1) << "values left in the ring were not destroyed";
}

TEST(MpscRing, ManyProducersLoseAndDuplicateNothing) {
  constexpr int producers = 4, per_producer = 200'000;
  mpsc_ring<int> q(1024);
  std::vector<std::thread> ts;
  for (int p = 0; p < producers; ++p)
    ts.emplace_back([&q, p] {
      for (int i = 0; i < per_producer; ++i) {
        int v = p * per_producer + i;
        while (!q.try_push(v)) std::this_thread::yield();
      }
    });
  std::vector<int> last(producers, -1);
  std::vector<char> seen(producers * per_producer, 0);
  long received = 0;
  while (received < producers * per_producer) {
    auto v = q.try_pop();
    if (!v) continue;
    int p = *v / per_producer;
    EXPECT_GT(*v, last[p]) << "values of one producer arrived out of order";
    last[p] = *v;
    EXPECT_EQ(seen[*v], 0) << "duplicate " << *v;
    seen[*v] = 1;
    ++received;
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(q.try_pop(), std::nullopt);
}
