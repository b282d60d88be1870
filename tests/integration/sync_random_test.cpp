// SPDX-License-Identifier: Apache-2.0
// Randomized (seeded) runs: many producers and consumers on a channel, and many tasks
// on a mutex and a semaphore, with cancellations and timeouts injected at random
// points. Afterwards: no value lost or duplicated, per-producer order kept, and no
// lock or permit lost.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <stop_token>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class SyncRandom : public backend_test {};

constexpr int tasks = 12, rounds = 150;
constexpr std::size_t permits = 3;

// Stops whatever stop_source is registered in `slots` at random moments.
task<void> chaos(std::vector<std::stop_source*>& slots, std::mt19937_64& rng, bool& over) {
  while (!over) {
    auto z = co_await sleep_for(std::chrono::microseconds(rng() % 200));
    if (!z) co_return;
    auto& s = slots[rng() % slots.size()];
    if (s != nullptr) s->request_stop();
  }
}

// One attempt with a stop token `chaos` may request: the send of `v` in its own scope.
task<result<void>> send_stoppable(channel<long>& ch, long v, std::stop_token t) {
  scope one(std::move(t));
  bool ok = false;
  auto attempt = [](channel<long>& ch, long v, bool& ok) -> task<void> {
    auto s = co_await ch.send(v);
    ok = s.has_value();
  };
  one.spawn(attempt(ch, v, ok));
  co_await one.join();
  if (ok) co_return result<void>{};
  co_return unexpected(std::errc::operation_canceled);
}

struct channel_outcome {
  std::vector<std::vector<long>> sent;  // per producer task, in order
  std::vector<long> received;
};

task<void> random_producer(channel<long>& ch, int id, std::vector<long>& sent, std::stop_source*& slot,
                           std::uint64_t seed, int& finished) {
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 400; ++k) {
    const long v = 1'000'000L * id + k;
    std::stop_source stop;
    slot = &stop;
    result<void> r;
    if (rng() % 4 == 0) r = co_await with_timeout(ch.send(v), std::chrono::microseconds(rng() % 100));
    else r = co_await send_stoppable(ch, v, stop.get_token());
    slot = nullptr;
    if (r) sent.push_back(v);
    if (rng() % 8 == 0) co_await yield();
  }
  ++finished;
}

task<void> random_consumer(channel<long>& ch, std::vector<long>& got, std::stop_source*& slot, std::uint64_t seed,
                           bool& over) {
  std::mt19937_64 rng(seed);
  for (;;) {
    std::stop_source stop;
    slot = &stop;
    result<long> v = unexpected(std::errc::operation_canceled);
    if (rng() % 3 == 0) v = co_await with_timeout(ch.receive(), std::chrono::microseconds(rng() % 50));
    else v = co_await ch.receive(stop.get_token());
    slot = nullptr;
    if (v) got.push_back(*v);
    else if (v.error() == errc::closed) break;
    if (rng() % 16 == 0) {
      auto z = co_await sleep_for(std::chrono::microseconds(rng() % 300));  // falls behind
      (void)z;
    }
  }
  over = true;
}

TEST_P(SyncRandom, ChannelLosesAndDuplicatesNothingUnderRandomCancellation) {
  const std::uint64_t seed = test_seed();
  constexpr int producers = 6;
  constexpr long thread_values = 2000, thread_base = 100'000'000L;
  channel<long> ch(8);
  std::atomic<bool> thread_go{false}, thread_done{false};
  std::thread thread_producer([&] {  // a plain thread: try_send only
    while (!thread_go) std::this_thread::yield();
    for (long k = 0; k < thread_values; ++k)
      while (!ch.try_send(thread_base + k)) std::this_thread::yield();
    thread_done = true;
  });
  auto out = run([](channel<long>& ch, std::uint64_t seed, std::atomic<bool>& go,
                    std::atomic<bool>& thread_done) -> task<channel_outcome> {
    std::mt19937_64 rng(seed);
    channel_outcome o;
    o.sent.resize(producers);
    std::vector<std::stop_source*> slots(producers + 1, nullptr);
    bool over = false;
    int finished = 0;
    scope sc;
    sc.spawn(chaos(slots, rng, over));
    sc.spawn(random_consumer(ch, o.received, slots[producers], rng(), over));
    for (int p = 0; p < producers; ++p) sc.spawn(random_producer(ch, p, o.sent[p], slots[p], rng(), finished));
    go = true;
    while (finished < producers || !thread_done) {
      auto z = co_await sleep_for(1ms);
      (void)z;
    }
    ch.close();
    co_await sc.join();
    co_return o;
  }(ch, seed, thread_go, thread_done));
  thread_producer.join();
  std::map<long, int> seen;
  for (long v : out.received) ++seen[v];
  std::size_t expected = thread_values;
  for (auto& per : out.sent) expected += per.size();
  EXPECT_EQ(out.received.size(), expected) << "seed " << seed;
  for (auto& [v, n] : seen) EXPECT_EQ(n, 1) << "value " << v << " received " << n << " times, seed " << seed;
  for (auto& per : out.sent)
    for (long v : per) EXPECT_EQ(seen.count(v), 1u) << "sent " << v << " never received, seed " << seed;
  // Order per producer.
  std::map<long, long> last;
  for (long v : out.received) {
    const long id = v / 1'000'000L;
    if (last.count(id)) {
      EXPECT_LT(last[id], v) << "seed " << seed;
    }
    last[id] = v;
  }
}

// Tasks lock a mutex and take semaphore permits with random timeouts and stops; the
// mutex never has two holders, the semaphore never more than its permits, and at the
// end the mutex is free and every permit is back.
TEST_P(SyncRandom, MutexAndSemaphoreLoseNoLockOrPermitUnderRandomCancellation) {
  const std::uint64_t seed = test_seed();
  struct shared_state {
    mutex m;
    semaphore s{permits};
    int in_mutex = 0;
    std::size_t in_semaphore = 0;
    int locked = 0, acquired = 0, failed = 0;
    std::vector<std::stop_source*> slots = std::vector<std::stop_source*>(tasks, nullptr);
  };
  auto worker = [](shared_state& st, int id, std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    for (int r = 0; r < rounds; ++r) {
      std::stop_source stop;
      st.slots[id] = &stop;
      const bool use_mutex = rng() % 2 == 0;
      const bool timed = rng() % 3 == 0;
      const auto limit = std::chrono::microseconds(rng() % 200);
      if (use_mutex) {
        result<scoped_lock> g = unexpected(std::errc::operation_canceled);
        if (timed) g = co_await with_timeout(st.m.lock(), limit);
        else g = co_await st.m.lock().with_stop(stop.get_token());
        st.slots[id] = nullptr;
        if (!g) {
          ++st.failed;
          continue;
        }
        ++st.locked;
        EXPECT_EQ(++st.in_mutex, 1);
        for (unsigned k = rng() % 3; k > 0; --k) co_await yield();
        --st.in_mutex;
      } else {
        result<void> a = unexpected(std::errc::operation_canceled);
        if (timed) a = co_await with_timeout(st.s.acquire(), limit);
        else a = co_await st.s.acquire().with_stop(stop.get_token());
        st.slots[id] = nullptr;
        if (!a) {
          ++st.failed;
          continue;
        }
        ++st.acquired;
        EXPECT_LE(++st.in_semaphore, permits);
        for (unsigned k = rng() % 3; k > 0; --k) co_await yield();
        --st.in_semaphore;
        st.s.release();
      }
    }
  };
  shared_state st;
  run([](shared_state& st, std::uint64_t seed, auto worker) -> task<void> {
    std::mt19937_64 rng(seed);
    bool over = false;
    scope workers, noise;
    noise.spawn(chaos(st.slots, rng, over));
    for (int i = 0; i < tasks; ++i) workers.spawn(worker(st, i, rng()));
    co_await workers.join();
    over = true;
    co_await noise.join();
  }(st, seed, worker));
  EXPECT_FALSE(st.m.is_locked()) << "seed " << seed;
  EXPECT_EQ(st.s.available(), permits) << "seed " << seed;
  EXPECT_EQ(st.locked + st.acquired + st.failed, tasks * rounds);
  EXPECT_GT(st.failed, 0) << "no cancellation happened, seed " << seed;
  EXPECT_GT(st.locked, 0);
  EXPECT_GT(st.acquired, 0);
}

RINGIO_ALL_BACKENDS(SyncRandom);

}  // namespace
