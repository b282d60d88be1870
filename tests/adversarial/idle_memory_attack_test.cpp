// SPDX-License-Identifier: Apache-2.0
// The pieces that keep an idle connection small, held to their promises through the
// public API: deadlines of receives and timers on a small io_uring ring (each ends once
// at about its own deadline, before the loop's first poll and while it runs, with and
// without ring growth, with SQPOLL); operations given their own stop token inside a
// stopped task, stopped from other threads as they complete; small provided-buffer
// rings that must grow; and idle keep-alive HTTP connections reset, woken and drained.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

std::optional<io_context> make_uring(io_context_options o) {
  o.backend = backend_kind::uring;
  o.quiet = true;
  try {
    return std::optional<io_context>(std::in_place, o);
  } catch (const std::system_error&) {
    return std::nullopt;
  }
}

bool is_canceled(const std::error_code& e) { return e == std::errc::operation_canceled; }
bool is_timed_out(const std::error_code& e) { return e == std::errc::timed_out; }

// ---------------------------------------------------------------------------------
// Deadlines on a small ring.

// How one deadline ended: ends counts completions, late/early how far from the deadline.
struct deadline_record {
  int ends = 0;
  int timed_out = 0;
  int other = 0;
  std::chrono::milliseconds want{0};
  std::chrono::milliseconds took{0};
  std::string error;
};

// A one-byte receive on a socket that never gets data, bounded by `d`.
task<void> timed_recv(stream_socket& s, std::chrono::milliseconds d, deadline_record& rec) {
  rec.want = d;
  const auto start = clock_type::now();
  std::byte b{};
  auto r = co_await with_timeout(s.recv(mutable_buffer(&b, 1)), d);
  rec.took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  ++rec.ends;
  if (!r && is_timed_out(r.error())) ++rec.timed_out;
  else {
    ++rec.other;
    rec.error = r ? std::string("data") : r.error().message();
  }
}

// A sleep of `d`, recorded the same way (timed_out counts a sleep that slept).
task<void> timed_sleep(std::chrono::milliseconds d, deadline_record& rec) {
  rec.want = d;
  const auto start = clock_type::now();
  auto r = co_await sleep_for(d);
  rec.took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  ++rec.ends;
  if (r) ++rec.timed_out;
  else {
    ++rec.other;
    rec.error = r.error().message();
  }
}

// Every record ended exactly once, as a deadline, no earlier than its deadline (less a
// millisecond of rounding) and not grossly later (10 s of slack for a loaded machine).
void expect_deadlines_honoured(const std::vector<deadline_record>& recs, const std::string& what) {
  int bad = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const auto& r = recs[i];
    const bool ok = r.ends == 1 && r.timed_out == 1 && r.took + 1ms >= r.want && r.took <= r.want + 10s;
    if (!ok && bad++ < 8)
      ADD_FAILURE() << what << ": #" << i << " deadline " << r.want.count() << " ms ended " << r.ends
                    << " time(s) after " << r.took.count() << " ms, timed out " << r.timed_out << ", other " << r.other
                    << " (" << r.error << ")";
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << recs.size() << " deadlines not honoured";
}

struct small_ring_case {
  unsigned sq_entries;
  bool resize;
  bool sqpoll;
};

std::string case_name(const small_ring_case& c) {
  return "sq" + std::to_string(c.sq_entries) + (c.resize ? "_resize" : "_fixed") + (c.sqpoll ? "_sqpoll" : "");
}

class SmallRingDeadlines : public ::testing::TestWithParam<small_ring_case> {};

// Receives with deadlines and sleeps, many more than the SQ holds, all started before
// the loop's first poll (the spawning task does not suspend until every one is
// started): each receive must time out once at its own deadline, each sleep end once
// at its own (deadlines of 30 to 400 ms, mixed at random, so that a timeout that took
// another's deadline shows).
TEST_P(SmallRingDeadlines, ManyBeforeTheFirstPoll) {
  const auto c = GetParam();
  auto ctx = make_uring({.sq_entries = c.sq_entries, .ring_resize = c.resize, .sqpoll = c.sqpoll});
  if (!ctx) GTEST_SKIP() << "io_uring with these settings cannot start here (" << case_name(c) << ")";
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  constexpr int receivers = 150, sleeps = 50;
  std::vector<socket_pair> pairs(receivers);
  std::vector<deadline_record> recs(receivers + sleeps);
  std::vector<std::chrono::milliseconds> ds;
  for (int i = 0; i < receivers + sleeps; ++i) ds.emplace_back(30 + static_cast<int>(rng() % 370));
  sync_wait(*ctx,
            [](std::vector<socket_pair>& pairs, std::vector<deadline_record>& recs,
               const std::vector<std::chrono::milliseconds>& ds) -> task<void> {
              scope s;
              for (int i = 0; i < receivers + sleeps; ++i) {
                const auto k = static_cast<std::size_t>(i);
                if (i % 4 == 3) s.spawn(timed_sleep(ds[k], recs[k]));
                else s.spawn(timed_recv(pairs[k % pairs.size()].b, ds[k], recs[k]));
              }
              co_await s.join();
            }(pairs, recs, ds));
  expect_deadlines_honoured(recs, case_name(c) + " " + ctx->describe());
  EXPECT_EQ(ctx->in_flight(), 0u) << ctx->describe();
}

// The same, started in waves while the loop runs: each wave after a loop pass, some
// with data arriving before the deadline (that receive must get its byte, not a
// timeout).
TEST_P(SmallRingDeadlines, WavesWhileTheLoopRuns) {
  const auto c = GetParam();
  auto ctx = make_uring({.sq_entries = c.sq_entries, .ring_resize = c.resize, .sqpoll = c.sqpoll});
  if (!ctx) GTEST_SKIP() << "io_uring with these settings cannot start here (" << case_name(c) << ")";
  const std::uint64_t seed = test_seed();
  constexpr int waves = 6, per_wave = 40;
  std::vector<socket_pair> pairs(waves * per_wave);
  std::vector<deadline_record> recs(waves * per_wave);
  std::vector<int> got(waves * per_wave, 0);
  sync_wait(*ctx,
            [](std::vector<socket_pair>& pairs, std::vector<deadline_record>& recs, std::vector<int>& got,
               std::uint64_t seed) -> task<void> {
              std::mt19937_64 rng(seed);
              scope s;
              for (int w = 0; w < waves; ++w) {
                for (int i = 0; i < per_wave; ++i) {
                  const auto k = static_cast<std::size_t>(w * per_wave + i);
                  const auto d = std::chrono::milliseconds(30 + static_cast<int>(rng() % 300));
                  if (i % 5 == 4) {
                    // This one gets data at once: it completes with its byte.
                    s.spawn([](stream_socket& sock, int& got) -> task<void> {
                      std::byte b{};
                      auto r = co_await with_timeout(sock.recv(mutable_buffer(&b, 1)), 20s);
                      got += (r && *r == 1 && b == std::byte{7}) ? 1 : 1000;
                    }(pairs[k].b, got[k]));
                    const std::byte b{7};
                    EXPECT_EQ(::send(pairs[k].a.native_handle(), &b, 1, 0), 1);
                    recs[k] = deadline_record{.ends = 1, .timed_out = 1};
                  } else {
                    got[k] = 1;
                    s.spawn(timed_recv(pairs[k].b, d, recs[k]));
                  }
                }
                (void)co_await nop();
              }
              co_await s.join();
            }(pairs, recs, got, seed));
  expect_deadlines_honoured(recs, case_name(c) + " " + ctx->describe());
  int bad = 0;
  for (int g : got) bad += g != 1;
  EXPECT_EQ(bad, 0) << "receives with data did not complete once with it";
}

INSTANTIATE_TEST_SUITE_P(, SmallRingDeadlines,
                         ::testing::Values(small_ring_case{1, false, false}, small_ring_case{2, false, false},
                                           small_ring_case{3, false, false}, small_ring_case{8, false, false},
                                           small_ring_case{8, true, false}, small_ring_case{16, false, false},
                                           small_ring_case{16, true, false}, small_ring_case{8, false, true},
                                           small_ring_case{16, false, true}),
                         [](const auto& i) { return case_name(i.param); });

// SQPOLL with a small SQ (16 entries): 200 operations of one kind started before the
// loop's first poll, so that the SQ fills while the kernel's poller thread takes from
// it. Plain receives (each then gets its byte), sleeps, receives with deadlines, or
// receives with deadlines mixed with sleeps; each completes once.
class SqpollSmallRing : public ::testing::TestWithParam<int> {};

TEST_P(SqpollSmallRing, TwoHundredBeforeTheFirstPoll) {
  auto ctx = make_uring({.sq_entries = 16, .ring_resize = false, .sqpoll = true});
  if (!ctx) GTEST_SKIP() << "SQPOLL cannot start here";
  const int kind = GetParam();
  constexpr int n = 200;
  std::vector<socket_pair> pairs(n);
  std::vector<deadline_record> recs(n);
  std::vector<int> got(n, 0);
  sync_wait(*ctx,
            [](std::vector<socket_pair>& pairs, std::vector<deadline_record>& recs, std::vector<int>& got,
               int kind) -> task<void> {
              scope s;
              for (int i = 0; i < n; ++i) {
                const auto k = static_cast<std::size_t>(i);
                const auto d = std::chrono::milliseconds(50 + i);
                if (kind == 0) {
                  s.spawn([](stream_socket& sock, int& got) -> task<void> {
                    std::byte b{};
                    auto r = co_await sock.recv(mutable_buffer(&b, 1));
                    got += (r && *r == 1) ? 1 : 1000;
                  }(pairs[k].b, got[k]));
                } else if (kind == 1 || (kind == 3 && i % 4 == 3)) {
                  s.spawn(timed_sleep(d, recs[k]));
                } else {
                  s.spawn(timed_recv(pairs[k].b, d, recs[k]));
                }
              }
              if (kind == 0) {
                (void)co_await sleep_for(20ms);
                for (auto& p : pairs) {
                  const std::byte b{1};
                  EXPECT_EQ(::send(p.a.native_handle(), &b, 1, 0), 1);
                }
              }
              co_await s.join();
            }(pairs, recs, got, kind));
  if (kind == 0) {
    int bad = 0;
    for (int g : got) bad += g != 1;
    EXPECT_EQ(bad, 0);
  } else {
    expect_deadlines_honoured(recs, ctx->describe());
  }
}

std::string sqpoll_kind_name(int k) {
  if (k == 0) return "receives";
  if (k == 1) return "sleeps";
  return k == 2 ? "timed_receives" : "timed_receives_and_sleeps";
}

INSTANTIATE_TEST_SUITE_P(, SqpollSmallRing, ::testing::Values(0, 1, 2, 3),
                         [](const auto& i) { return sqpoll_kind_name(i.param); });

// SQPOLL at the default SQ size (4,096 entries): 4,000 receives with deadlines and
// 2,000 sleeps started before the loop's first poll, more than the SQ holds. Each ends
// once at about its own deadline.
TEST(IdleMemoryAttack, SqpollDefaultRingSixThousandDeadlines) {
  auto ctx = make_uring({.sqpoll = true});
  if (!ctx) GTEST_SKIP() << "SQPOLL cannot start here";
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  constexpr int receivers = 4000, sleeps = 2000;
  std::vector<socket_pair> pairs(receivers);
  std::vector<deadline_record> recs(receivers + sleeps);
  std::vector<std::chrono::milliseconds> ds;
  for (int i = 0; i < receivers + sleeps; ++i) ds.emplace_back(100 + static_cast<int>(rng() % 400));
  sync_wait(*ctx,
            [](std::vector<socket_pair>& pairs, std::vector<deadline_record>& recs,
               const std::vector<std::chrono::milliseconds>& ds) -> task<void> {
              scope s;
              std::size_t next_pair = 0;
              for (int i = 0; i < receivers + sleeps; ++i) {
                const auto k = static_cast<std::size_t>(i);
                if (i % 3 == 2) s.spawn(timed_sleep(ds[k], recs[k]));
                else s.spawn(timed_recv(pairs[next_pair++].b, ds[k], recs[k]));
              }
              co_await s.join();
            }(pairs, recs, ds));
  expect_deadlines_honoured(recs, ctx->describe());
}

// One receive with a deadline as the very first operation of a loop whose SQ holds a
// single entry (the receive and its linked timeout cannot share a submission of one
// entry): it must still time out at about its deadline, not wait forever. Bounded by
// a watchdog thread that stops the loop after 20 s.
TEST(IdleMemoryAttack, DeadlineOnARingOfOneEntry) {
  auto ctx = make_uring({.sq_entries = 1, .ring_resize = false});
  if (!ctx) GTEST_SKIP() << "io_uring with one SQ entry cannot start here";
  socket_pair p;
  deadline_record rec;
  std::atomic<bool> finished{false};
  io_context& c = *ctx;
  std::thread watchdog([&] {
    const auto until = clock_type::now() + 20s;
    while (!finished.load() && clock_type::now() < until) std::this_thread::sleep_for(5ms);
    if (!finished.load()) c.stop();
  });
  c.spawn([](stream_socket& s, deadline_record& rec, std::atomic<bool>& finished, io_context& c) -> task<void> {
    co_await timed_recv(s, 100ms, rec);
    finished.store(true);
    c.stop();
  }(p.b, rec, finished, c));
  c.run();
  finished.store(true);
  watchdog.join();
  expect_deadlines_honoured({rec}, "sq1 " + c.describe());
}

// ---------------------------------------------------------------------------------
// Stops of operations that obey their own token and their task's.

// One receive of one byte given its own token, in a task whose scope obeys `outer`.
struct stop_item {
  socket_pair pair;
  std::unique_ptr<std::stop_source> own = std::make_unique<std::stop_source>();
  std::unique_ptr<std::stop_source> outer = std::make_unique<std::stop_source>();
  bool stop_own = false, stop_outer = false, send = false, destroy_source = false;
  int ends = 0, data = 0, canceled = 0, other = 0;
  std::string error;
};

task<void> stopped_recv(stop_item& it, std::stop_token own) {
  std::byte b{};
  auto r = co_await it.pair.b.recv(mutable_buffer(&b, 1)).with_stop(own);
  ++it.ends;
  if (r && *r == 1 && b == std::byte{0x5a}) ++it.data;
  else if (!r && is_canceled(r.error())) ++it.canceled;
  else {
    ++it.other;
    it.error = r ? "got " + std::to_string(*r) + " bytes" : r.error().message();
  }
}

task<void> item_task(stop_item& it) {
  scope inner(it.outer->get_token());
  inner.spawn(stopped_recv(it, it.own->get_token()));
  co_await inner.join();
}

// Checks one item once every thread is done: it ended once; a cancelled receive left
// its byte in the socket, a completed one took it; one that nothing stopped got it.
void check_item(stop_item& it, std::size_t i, int& bad) {
  std::byte b{};
  const ssize_t left = ::recv(it.pair.b.native_handle(), &b, 1, MSG_DONTWAIT);
  bool ok = it.ends == 1 && it.other == 0;
  if (it.data == 1) ok = ok && it.send && left < 0;
  else if (it.canceled == 1) ok = ok && (it.stop_own || it.stop_outer) && (it.send ? left == 1 : left < 0);
  if (!it.stop_own && !it.stop_outer) ok = ok && it.data == 1;
  if (!ok && bad++ < 8)
    ADD_FAILURE() << "item " << i << " (stop own " << it.stop_own << ", stop task " << it.stop_outer << ", data "
                  << it.send << "): ended " << it.ends << " time(s), data " << it.data << ", canceled " << it.canceled
                  << ", other " << it.other << " " << it.error << "; byte left in socket " << left;
}

class OwnTokenStops : public backend_test {};

// Thousands of receives, each given its own token inside a task with its own stop:
// one thread requests the tasks' stops, another the operations' own (destroying some
// stop sources right after the request), a third sends each receive its byte, all at
// once and in random orders. Each receive ends exactly once, with its byte or a cancel
// that left the byte in the socket.
TEST_P(OwnTokenStops, TwoThreadsStopWhileDataArrives) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  constexpr int rounds = 150, per_round = 32;
  int bad = 0;
  for (int round = 0; round < rounds && bad == 0; ++round) {
    std::vector<stop_item> items(per_round);
    for (auto& it : items) {
      const unsigned m = static_cast<unsigned>(rng() % 8);
      it.stop_own = (m & 1) != 0;
      it.stop_outer = (m & 2) != 0;
      it.send = (m & 4) != 0 || (!it.stop_own && !it.stop_outer);
      it.destroy_source = rng() % 2 == 0;
    }
    std::vector<std::size_t> order_a(per_round), order_b(per_round), order_c(per_round);
    for (std::size_t i = 0; i < order_a.size(); ++i) order_a[i] = order_b[i] = order_c[i] = i;
    std::shuffle(order_a.begin(), order_a.end(), rng);
    std::shuffle(order_b.begin(), order_b.end(), rng);
    std::shuffle(order_c.begin(), order_c.end(), rng);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (auto i : order_a)
        if (items[i].stop_outer) items[i].outer->request_stop();
    });
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (auto i : order_b)
        if (items[i].stop_own) {
          items[i].own->request_stop();
          if (items[i].destroy_source) items[i].own.reset();
        }
    });
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (auto i : order_c)
        if (items[i].send) {
          const std::byte b{0x5a};
          EXPECT_EQ(::send(items[i].pair.a.native_handle(), &b, 1, 0), 1);
        }
    });
    run([](std::vector<stop_item>& items, std::atomic<bool>& go) -> task<void> {
      scope all(std::stop_token{});
      for (auto& it : items) all.spawn(item_task(it));
      (void)co_await nop();
      go.store(true);
      co_await all.join();
    }(items, go));
    for (auto& t : threads) t.join();
    for (std::size_t i = 0; i < items.size(); ++i) check_item(items[i], i, bad);
    if (bad != 0) ADD_FAILURE() << "round " << round << " (seed " << seed << ")";
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// Stops requested in the same loop pass as completions: both receives of a pair have
// their byte before the loop polls; whichever completes first requests the other's
// own token and the other's task's stop, and destroys its stop source. The other ends
// once: with its byte, or cancelled with the byte still in its socket.
TEST_P(OwnTokenStops, StopInTheSamePassAsTheCompletion) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  int bad = 0;
  for (int round = 0; round < 300 && bad == 0; ++round) {
    std::vector<stop_item> items(2);
    for (auto& it : items) {
      it.send = true;
      it.stop_own = it.stop_outer = true;  // either may be stopped by the other
      const std::byte b{0x5a};
      EXPECT_EQ(::send(it.pair.a.native_handle(), &b, 1, 0), 1);
    }
    const int mode = static_cast<int>(rng() % 3);
    run([](std::vector<stop_item>& items, int mode) -> task<void> {
      scope all(std::stop_token{});
      // The tokens are taken first: the first receive may complete (and stop the other)
      // before the second task starts.
      std::vector<std::stop_token> own{items[0].own->get_token(), items[1].own->get_token()};
      for (int k = 0; k < 2; ++k)
        all.spawn([](std::vector<stop_item>& items, int k, int mode, std::stop_token mine) -> task<void> {
          stop_item& me = items[static_cast<std::size_t>(k)];
          stop_item& other = items[static_cast<std::size_t>(1 - k)];
          scope inner(me.outer->get_token());
          inner.spawn(stopped_recv(me, mine));
          co_await inner.join();
          if (other.ends == 0) {
            if (mode != 1 && other.own) other.own->request_stop();
            if (mode != 0) other.outer->request_stop();
            if (mode == 2) other.own.reset();
          }
        }(items, k, mode, own[static_cast<std::size_t>(k)]));
      co_await all.join();
    }(items, mode));
    for (std::size_t i = 0; i < items.size(); ++i) check_item(items[i], i, bad);
    if (bad != 0) ADD_FAILURE() << "round " << round << " mode " << mode << " (seed " << seed << ")";
  }
}

RINGIO_ALL_BACKENDS(OwnTokenStops);

// ---------------------------------------------------------------------------------
// Provided-buffer rings that start small.

// Writes `n` little-endian 32-bit sequence numbers starting at `first` to `fd` (which
// may be non-blocking), in pieces of random size.
void write_sequence(int fd, std::uint32_t first, std::uint32_t n, std::uint64_t seed) {
  std::vector<std::byte> data(static_cast<std::size_t>(n) * 4);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t v = first + i;
    std::memcpy(data.data() + static_cast<std::size_t>(i) * 4, &v, 4);
  }
  std::mt19937_64 rng(seed);
  std::size_t at = 0;
  while (at < data.size()) {
    const std::size_t piece = std::min<std::size_t>(data.size() - at, 1 + rng() % 3000);
    const ssize_t w = ::send(fd, data.data() + at, piece, MSG_NOSIGNAL);
    if (w > 0) at += static_cast<std::size_t>(w);
    else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) std::this_thread::sleep_for(100us);
    else return;  // the receiving side gave up (and reported why)
    if (rng() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
  }
}

// Checks received bytes against the sequence as they come.
struct sequence_check {
  std::uint32_t next = 0;
  unsigned char partial[4]{};
  std::size_t partial_len = 0;
  std::size_t bytes = 0;
  bool broken = false;
  void feed(std::span<const std::byte> b) {
    for (auto x : b) {
      partial[partial_len++] = static_cast<unsigned char>(x);
      ++bytes;
      if (partial_len == 4) {
        std::uint32_t v = 0;
        std::memcpy(&v, partial, 4);
        if (v != next && !broken) {
          broken = true;
          ADD_FAILURE() << "sequence broken at byte " << bytes << ": got " << v << ", expected " << next;
        }
        ++next;
        partial_len = 0;
      }
    }
  }
};

struct pool_case {
  ringio::backend_kind backend;
  unsigned initial;
};

class SmallRingPool : public ::testing::TestWithParam<pool_case> {};

std::string pool_case_name(const ::testing::TestParamInfo<pool_case>& i) {
  std::string s(to_string(i.param.backend));
  for (char& c : s)
    if (c == '-') c = '_';
  return s + "_initial" + std::to_string(i.param.initial);
}

std::optional<io_context> make_backend(ringio::backend_kind k) {
  try {
    return std::optional<io_context>(std::in_place, io_context_options{.backend = k, .quiet = true});
  } catch (const std::system_error&) {
    return std::nullopt;
  }
}

// 24 multishot receivers share a pool of 64 buffers of 512 bytes whose ring offers 1, 2
// or 3 at first; other threads write 20,000 sequence numbers into each connection. The
// consumers hold up to 2 buffers each (48 of the 64 at most) and release them in
// random order. Every byte
// arrives once and in order on every connection.
TEST_P(SmallRingPool, MultishotReceiversKeepEveryByteInOrder) {
  const auto c = GetParam();
  auto ctx = make_backend(c.backend);
  if (!ctx) GTEST_SKIP() << "backend cannot start here";
  const std::uint64_t seed = test_seed();
  constexpr int conns = 24;
  constexpr std::uint32_t numbers = 20'000;
  std::vector<socket_pair> pairs(conns);
  std::vector<sequence_check> checks(conns);
  buffer_pool_options po;
  po.initial_ring_buffers = c.initial;
  sync_wait(*ctx,
            [](std::vector<socket_pair>& pairs, std::vector<sequence_check>& checks, buffer_pool_options po,
               std::uint64_t seed) -> task<void> {
              buffer_pool pool(*io_context::current(), 64, 512, po);
              std::vector<std::thread> writers;
              for (int i = 0; i < conns; ++i)
                writers.emplace_back([fd = pairs[static_cast<std::size_t>(i)].a.native_handle(), seed, i] {
                  write_sequence(fd, 0, numbers, seed + static_cast<std::uint64_t>(i));
                  ::shutdown(fd, SHUT_WR);
                });
              scope s;
              for (int i = 0; i < conns; ++i)
                s.spawn([](stream_socket& sock, buffer_pool& pool, sequence_check& check,
                           std::uint64_t seed) -> task<void> {
                  multishot_receiver rx(sock, pool);
                  std::mt19937_64 rng(seed);
                  std::vector<pooled_buffer> held;
                  for (;;) {
                    auto r = co_await with_timeout(rx.next(), 20s);
                    if (!r) {
                      EXPECT_TRUE(false) << "next(): " << r.error().message() << " after " << check.bytes << " bytes";
                      ::shutdown(sock.native_handle(), SHUT_RDWR);
                      break;
                    }
                    if (r->empty()) break;
                    check.feed(r->bytes());
                    held.push_back(std::move(*r));
                    pooled_buffer more;
                    while (rx.next_ready(more)) {
                      check.feed(more.bytes());
                      held.push_back(std::move(more));
                    }
                    while (held.size() > rng() % 3) {
                      const std::size_t k = rng() % held.size();
                      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
                    }
                    if (rng() % 8 == 0) (void)co_await nop();
                  }
                }(pairs[static_cast<std::size_t>(i)].b, pool, checks[static_cast<std::size_t>(i)],
                                               seed * 31 + static_cast<std::uint64_t>(i)));
              co_await s.join();
              for (auto& w : writers) w.join();
              EXPECT_EQ(pool.available(), pool.count());
            }(pairs, checks, po, seed));
  for (int i = 0; i < conns; ++i) {
    EXPECT_EQ(checks[static_cast<std::size_t>(i)].bytes, static_cast<std::size_t>(numbers) * 4) << "connection " << i;
    EXPECT_FALSE(checks[static_cast<std::size_t>(i)].broken) << "connection " << i;
  }
}

// receive_pooled on 48 connections with a pool of 32 buffers whose ring offers 1, 2 or
// 3 at first: a receive that finds no buffer gets no_buffer_space and the data stays in
// the socket, so retrying (after a loop pass) loses nothing; every byte arrives in
// order.
TEST_P(SmallRingPool, PooledReceivesRetryingOnNoBufferSpace) {
  const auto c = GetParam();
  auto ctx = make_backend(c.backend);
  if (!ctx) GTEST_SKIP() << "backend cannot start here";
  const std::uint64_t seed = test_seed();
  constexpr int conns = 48;
  constexpr std::uint32_t numbers = 10'000;
  std::vector<socket_pair> pairs(conns);
  std::vector<sequence_check> checks(conns);
  std::vector<int> dry(conns, 0);
  buffer_pool_options po;
  po.initial_ring_buffers = c.initial;
  sync_wait(*ctx,
            [](std::vector<socket_pair>& pairs, std::vector<sequence_check>& checks, std::vector<int>& dry,
               buffer_pool_options po, std::uint64_t seed) -> task<void> {
              buffer_pool pool(*io_context::current(), 32, 256, po);
              std::vector<std::thread> writers;
              for (int i = 0; i < conns; ++i)
                writers.emplace_back([fd = pairs[static_cast<std::size_t>(i)].a.native_handle(), seed, i] {
                  write_sequence(fd, 0, numbers, seed + 1000 + static_cast<std::uint64_t>(i));
                  ::shutdown(fd, SHUT_WR);
                });
              scope s;
              for (int i = 0; i < conns; ++i)
                s.spawn([](stream_socket& sock, buffer_pool& pool, sequence_check& check,
                           int& dry) -> task<void> {
                  for (;;) {
                    auto r = co_await with_timeout(receive_pooled(sock, pool), 20s);
                    if (!r && r.error() == std::errc::no_buffer_space) {
                      ++dry;
                      (void)co_await sleep_for(1ms);
                      continue;
                    }
                    if (!r) {
                      EXPECT_TRUE(false) << "receive_pooled: " << r.error().message() << " after " << check.bytes
                                         << " bytes";
                      ::shutdown(sock.native_handle(), SHUT_RDWR);
                      break;
                    }
                    if (r->empty()) break;
                    check.feed(r->bytes());
                  }
                }(pairs[static_cast<std::size_t>(i)].b, pool, checks[static_cast<std::size_t>(i)],
                                     dry[static_cast<std::size_t>(i)]));
              co_await s.join();
              for (auto& w : writers) w.join();
              EXPECT_EQ(pool.available(), pool.count());
            }(pairs, checks, dry, po, seed));
  int dry_total = 0;
  for (int i = 0; i < conns; ++i) {
    dry_total += dry[static_cast<std::size_t>(i)];
    EXPECT_EQ(checks[static_cast<std::size_t>(i)].bytes, static_cast<std::size_t>(numbers) * 4) << "connection " << i;
    EXPECT_FALSE(checks[static_cast<std::size_t>(i)].broken) << "connection " << i;
  }
  std::printf("no_buffer_space retries: %d\n", dry_total);
}

// The pool is destroyed after its ring has grown, while 16 multishot receivers are
// armed, some holding buffers and some with data queued: what was already received is
// still delivered, the receivers then end (no_buffer_space on io_uring, or the rest
// of the data on the readiness backends), the held buffers outlive the pool, and
// nothing hangs.
TEST_P(SmallRingPool, PoolDestroyedAfterGrowing) {
  const auto c = GetParam();
  auto ctx = make_backend(c.backend);
  if (!ctx) GTEST_SKIP() << "backend cannot start here";
  constexpr int conns = 16;
  std::vector<socket_pair> pairs(conns);
  buffer_pool_options po;
  po.initial_ring_buffers = c.initial;
  int ended = 0;
  sync_wait(*ctx, [](std::vector<socket_pair>& pairs, buffer_pool_options po, int& ended) -> task<void> {
    auto pool = std::make_unique<buffer_pool>(*io_context::current(), 64, 128, po);
    std::vector<std::unique_ptr<multishot_receiver>> rxs;
    for (auto& p : pairs) rxs.push_back(std::make_unique<multishot_receiver>(p.b, *pool));
    std::vector<pooled_buffer> held;
    // Each connection gets 1 KiB (8 buffers' worth) so the ring must grow.
    std::vector<char> kb(1024, 'x');
    for (auto& p : pairs) EXPECT_EQ(::send(p.a.native_handle(), kb.data(), kb.size(), 0), 1024);
    for (int i = 0; i < conns; ++i) {
      auto r = co_await with_timeout(rxs[static_cast<std::size_t>(i)]->next(), 10s);
      EXPECT_TRUE(r) << (r ? "" : r.error().message());
      if (r && i % 2 == 0) held.push_back(std::move(*r));
    }
    (void)co_await nop();
    pool.reset();
    for (auto& p : pairs) EXPECT_EQ(::send(p.a.native_handle(), kb.data(), 100, 0), 100);
    for (auto& p : pairs) ::shutdown(p.a.native_handle(), SHUT_WR);
    for (int i = 0; i < conns; ++i) {
      for (int k = 0; k < 100; ++k) {
        auto r = co_await with_timeout(rxs[static_cast<std::size_t>(i)]->next(), 10s);
        if (!r) {
          EXPECT_NE(r.error(), std::errc::timed_out) << "receiver " << i << " hangs after its pool is gone";
          ++ended;
          break;
        }
        if (r->empty()) {
          ++ended;
          break;
        }
      }
    }
    rxs.clear();
    held.clear();
  }(pairs, po, ended));
  EXPECT_EQ(ended, conns);
}

INSTANTIATE_TEST_SUITE_P(, SmallRingPool,
                         ::testing::Values(pool_case{backend_kind::uring, 1}, pool_case{backend_kind::uring, 2},
                                           pool_case{backend_kind::uring, 3}, pool_case{backend_kind::epoll, 1},
                                           pool_case{backend_kind::uring_poll, 3}),
                         pool_case_name);

// ---------------------------------------------------------------------------------
// Idle keep-alive HTTP connections.

constexpr std::string_view http_request = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
constexpr std::string_view http_body = "idle-ok";

// Sends one request on a blocking client socket and reads until the body is seen.
bool http_round_trip(int fd) {
  if (::send(fd, http_request.data(), http_request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(http_request.size()))
    return false;
  std::string in;
  char buf[512];
  while (in.find(http_body) == std::string::npos) {
    const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) return false;
    in.append(buf, static_cast<std::size_t>(r));
  }
  return in.starts_with("HTTP/1.1 200");
}

int blocking_connect(const socket_address& at, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{.tv_sec = 20, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return -1;
  }
  (void)at;
  return fd;
}

void reset_and_close(int fd) {
  linger l{.l_onoff = 1, .l_linger = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

class IdleHttp : public backend_test {};

// 1,500 keep-alive connections, each idle after one request; a third are reset while
// idle, a third get a partial request head and are then reset; after 300 ms (past a
// trim of the request-state cache) the rest all send a request at once and get their
// answer. Then serve()'s stop: it completes, the server has no connection left and no
// descriptor of the server side stays open.
TEST_P(IdleHttp, ResetsWhileIdleThenABurstThenStop) {
  const std::size_t fds_before = open_fd_count();
  http::router routes;
  routes.get("/", [](http::request&) -> task<http::response> { co_return http::response::borrowed(200, http_body); });
  http::server srv(routes);
  auto l = listen_loopback({});
  const socket_address at = address_of(l);
  const int port = at.port();
  constexpr int n = 1500;
  std::atomic<int> phase{0};
  std::atomic<int> failures{0};
  std::vector<int> fds(n, -1);
  std::thread client([&] {
    for (int i = 0; i < n; ++i) {
      fds[static_cast<std::size_t>(i)] = blocking_connect(at, port);
      if (fds[static_cast<std::size_t>(i)] < 0 || !http_round_trip(fds[static_cast<std::size_t>(i)]))
        failures.fetch_add(1);
    }
    for (int i = 0; i < n; i += 3) reset_and_close(std::exchange(fds[static_cast<std::size_t>(i)], -1));
    for (int i = 1; i < n; i += 3) {
      const int fd = std::exchange(fds[static_cast<std::size_t>(i)], -1);
      (void)::send(fd, "GET / HT", 8, MSG_NOSIGNAL);
      reset_and_close(fd);
    }
    std::this_thread::sleep_for(300ms);
    for (int i = 2; i < n; i += 3)
      if (::send(fds[static_cast<std::size_t>(i)], http_request.data(), http_request.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(http_request.size()))
        failures.fetch_add(1);
    for (int i = 2; i < n; i += 3) {
      std::string in;
      char buf[512];
      while (in.find(http_body) == std::string::npos) {
        const ssize_t r = ::recv(fds[static_cast<std::size_t>(i)], buf, sizeof buf, 0);
        if (r <= 0) break;
        in.append(buf, static_cast<std::size_t>(r));
      }
      if (in.find(http_body) == std::string::npos) failures.fetch_add(1000);
    }
    phase.store(1);
  });
  std::size_t left = 99;
  run([](http::server& srv, stream_listener& l, std::atomic<int>& phase, std::size_t& left) -> task<void> {
    std::stop_source stop;
    scope server;
    server.spawn(srv.serve(l, stop.get_token()));
    const auto until = clock_type::now() + 120s;
    while (phase.load() == 0 && clock_type::now() < until) (void)co_await sleep_for(5ms);
    stop.request_stop();
    co_await server.join();
    left = srv.connections();
  }(srv, l, phase, left));
  client.join();
  EXPECT_EQ(failures.load(), 0) << "requests that got no answer (1 each) or bursts unanswered (1000 each)";
  EXPECT_EQ(left, 0u);
  for (int& fd : fds)
    if (fd >= 0) ::close(std::exchange(fd, -1));
  { auto dropped = std::move(l); }
  EXPECT_EQ(open_fd_count(), fds_before) << "descriptors left open";
}

// drain() with idle connections and busy ones (their handler sleeps 200 ms): the idle
// ones close at once, the busy ones get their whole answer, serve() then completes.
TEST_P(IdleHttp, DrainWithIdleAndBusyConnections) {
  http::router routes;
  routes.get("/", [](http::request&) -> task<http::response> { co_return http::response::borrowed(200, http_body); });
  routes.get("/slow", [](http::request&) -> task<http::response> {
    (void)co_await sleep_for(200ms);
    co_return http::response::borrowed(200, http_body);
  });
  http::server srv(routes);
  auto l = listen_loopback({});
  const socket_address at = address_of(l);
  const int port = at.port();
  constexpr int n = 200;
  std::atomic<int> phase{0}, failures{0}, idle_closed{0};
  std::thread client([&] {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
      fds.push_back(blocking_connect(at, port));
      if (fds.back() < 0 || !http_round_trip(fds.back())) failures.fetch_add(1);
    }
    constexpr std::string_view slow = "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n";
    for (int i = 0; i < n; i += 2) (void)::send(fds[static_cast<std::size_t>(i)], slow.data(), slow.size(), 0);
    std::this_thread::sleep_for(50ms);
    phase.store(1);  // the loop drains now
    for (int i = 0; i < n; ++i) {
      std::string in;
      char buf[512];
      for (;;) {
        const ssize_t r = ::recv(fds[static_cast<std::size_t>(i)], buf, sizeof buf, 0);
        if (r <= 0) break;
        in.append(buf, static_cast<std::size_t>(r));
      }
      if (i % 2 == 0 && in.find(http_body) == std::string::npos) failures.fetch_add(1);
      if (i % 2 == 1) idle_closed.fetch_add(in.empty() ? 1 : 0);
      ::close(fds[static_cast<std::size_t>(i)]);
    }
    phase.store(2);
  });
  run([](http::server& srv, stream_listener& l, std::atomic<int>& phase) -> task<void> {
    std::stop_source stop;
    scope server;
    server.spawn(srv.serve(l, stop.get_token()));
    while (phase.load() == 0) (void)co_await sleep_for(2ms);
    stop.request_stop();
    co_await server.join();
  }(srv, l, phase));
  client.join();
  EXPECT_EQ(failures.load(), 0) << "busy connections that lost their answer";
  EXPECT_EQ(idle_closed.load(), n / 2) << "idle connections that were not closed cleanly";
  EXPECT_EQ(srv.connections(), 0u);
}

RINGIO_ALL_BACKENDS(IdleHttp);

}  // namespace
