// SPDX-License-Identifier: Apache-2.0
// io_context_options::ring_resize (IORING_REGISTER_RESIZE_RINGS, Linux 6.13): the ring
// starts small and grows in place. Operations in flight far above the starting CQ size
// all complete exactly once on every backend; seeded bursts that make the ring grow
// while completions sit in the CQ and submissions in the SQ lose none; describe() shows
// the state, and with the option off the ring has its full size from the start.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

bool has_ring(backend_kind k) { return k == backend_kind::uring || k == backend_kind::uring_poll; }

// "cq N" of describe(): the CQ's current size (0 if not found).
unsigned cq_size(const std::string& d) {
  auto at = d.find(", cq ");
  return at == std::string::npos ? 0 : static_cast<unsigned>(std::stoul(d.substr(at + 5)));
}

bool resizes(const std::string& d) { return d.find("ring resize yes") != std::string::npos; }

class RingResize : public backend_test {};

// 20,000 sleeps and 200 receives pending at once: twenty times the CQ a growing ring
// starts with. Each completes once, with its result. That all the sleeps are pending at
// once holds only if starting them took less than the shortest sleep: when the machine
// stalls the test thread for longer (a loaded CI host), the round is run again with
// sleeps longer than the stall, up to three rounds; every round checks exactly-once.
TEST_P(RingResize, TwentyThousandPendingOperationsCompleteExactlyOnce) {
  static constexpr int timers = 20'000, receivers = 200;
  const std::uint64_t seed = test_seed();
  std::vector<socket_pair> pairs(receivers);
  struct round_result {
    std::size_t peak = 0;
    std::chrono::microseconds start_took{};
  };
  auto round = [&](std::chrono::microseconds shortest, std::uint64_t round_seed) {
    std::vector<int> done(timers + receivers, 0);
    round_result res;
    run([](std::vector<int>& done, std::vector<socket_pair>& pairs, round_result& res,
           std::chrono::microseconds shortest, std::uint64_t seed, io_context& ctx) -> task<void> {
      std::mt19937_64 rng(seed);
      const auto t0 = std::chrono::steady_clock::now();
      scope s;
      for (int i = 0; i < receivers; ++i)
        s.spawn([](socket_pair& p, int& d, int i) -> task<void> {
          std::byte b{};
          auto r = co_await p.b.recv(mutable_buffer(&b, 1));
          if (r && *r == 1 && b == static_cast<std::byte>(i & 0xff)) ++d;
          else d = -1000;
        }(pairs[static_cast<std::size_t>(i)], done[static_cast<std::size_t>(timers + i)], i));
      for (int i = 0; i < timers; ++i)
        s.spawn([](int& d, std::chrono::microseconds t) -> task<void> {
          if (co_await sleep_for(t)) ++d;
          else d = -1000;
        }(done[static_cast<std::size_t>(i)], shortest + std::chrono::microseconds(rng() % 200'000)));
      (void)co_await nop();  // every operation is in flight now
      res.peak = ctx.in_flight();
      res.start_took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
      for (int i = 0; i < receivers; ++i) {
        const auto b = static_cast<std::byte>(i & 0xff);
        auto w = co_await pairs[static_cast<std::size_t>(i)].a.send(const_buffer(&b, 1));
        EXPECT_TRUE(w && *w == 1);
      }
      co_await s.join();
    }(done, pairs, res, shortest, round_seed, ctx()));
    for (std::size_t i = 0; i < done.size(); ++i) EXPECT_EQ(done[i], 1) << "operation " << i;
    return res;
  };
  std::chrono::microseconds shortest = 200ms;
  round_result r;
  bool calm = false;
  for (int attempt = 0; attempt < 3 && !calm; ++attempt) {
    r = round(shortest, seed + static_cast<std::uint64_t>(attempt));
    if (::testing::Test::HasFailure()) return;
    calm = r.start_took < shortest;
    if (calm) break;
    std::printf("starting the operations took %lld ms, longer than the shortest sleep (%lld ms): again\n",
                static_cast<long long>(r.start_took.count() / 1000), static_cast<long long>(shortest.count() / 1000));
    shortest = 4 * r.start_took;
  }
  const std::string d = ctx().describe();
  if (!calm)
    GTEST_SKIP() << "every operation completed once, but the machine stalled the test thread for "
                 << r.start_took.count() / 1000 << " ms while they started, three rounds in a row: " << d;
  if (GetParam() == backend_kind::uring) {
    EXPECT_GE(r.peak, std::size_t{timers}) << d;
  }
  if (has_ring(GetParam()) && resizes(d)) {
    EXPECT_GE(cq_size(d), 32768u) << d;
  }
}

// Seeded bursts of NOPs (their completions sit in the CQ before the loop reaps them),
// sleeps and receives, started while earlier bursts are still pending: the ring grows
// in the middle of a burst, with SQEs queued and CQEs unreaped. Every operation
// completes once with its result, and nothing is left in flight.
TEST_P(RingResize, GrowingWhileCompletionsArePendingLosesNone) {
  const std::uint64_t seed = test_seed();
  constexpr int rounds = 10, max_burst = 6000, receivers = 96;
  std::mt19937_64 rng(seed);
  struct plan_op {
    int kind;  // 0 nop, 1 sleep, 2 receive
    int us;    // sleep length / send delay
    int pair;
  };
  std::vector<std::vector<plan_op>> plan(rounds);
  int next_pair = 0;
  std::size_t total = 0;
  for (auto& burst : plan) {
    const int n = 1 + static_cast<int>(rng() % max_burst);
    for (int i = 0; i < n; ++i) {
      int kind = static_cast<int>(rng() % 3);
      if (kind == 2 && next_pair == receivers) kind = 0;
      burst.push_back({kind, static_cast<int>(rng() % 3000), kind == 2 ? next_pair++ : -1});
    }
    total += burst.size();
  }
  std::vector<socket_pair> pairs(receivers);
  std::vector<int> done(total, 0);
  run([](std::vector<std::vector<plan_op>>& plan, std::vector<socket_pair>& pairs, std::vector<int>& done,
         std::uint64_t seed) -> task<void> {
    std::mt19937_64 gaps(seed + 1);
    scope s;
    std::size_t id = 0;
    for (auto& burst : plan) {
      for (const plan_op& op : burst) {
        int& d = done[id++];
        if (op.kind == 0) {
          s.spawn([](int& d) -> task<void> {
            if (co_await nop()) ++d;
            else d = -1000;
          }(d));
        } else if (op.kind == 1) {
          s.spawn([](int& d, int us) -> task<void> {
            if (co_await sleep_for(std::chrono::microseconds(us))) ++d;
            else d = -1000;
          }(d, op.us));
        } else {
          socket_pair& p = pairs[static_cast<std::size_t>(op.pair)];
          s.spawn([](socket_pair& p, int& d, int tag) -> task<void> {
            std::byte b{};
            auto r = co_await p.b.recv(mutable_buffer(&b, 1));
            if (r && *r == 1 && b == static_cast<std::byte>(tag)) ++d;
            else d = -1000;
          }(p, d, op.pair));
          s.spawn([](socket_pair& p, int us, int tag) -> task<void> {
            (void)co_await sleep_for(std::chrono::microseconds(us));
            const auto b = static_cast<std::byte>(tag);
            auto w = co_await p.a.send(const_buffer(&b, 1));
            EXPECT_TRUE(w && *w == 1);
          }(p, op.us, op.pair));
        }
      }
      // The next burst comes at once or after a loop iteration or a short sleep.
      switch (gaps() % 3) {
        case 0:
          break;
        case 1:
          (void)co_await nop();
          break;
        default:
          (void)co_await sleep_for(std::chrono::microseconds(gaps() % 2000));
      }
    }
    co_await s.join();
  }(plan, pairs, done, seed));
  for (std::size_t i = 0; i < done.size(); ++i) ASSERT_EQ(done[i], 1) << "operation " << i << " of " << total;
  EXPECT_EQ(ctx().in_flight(), 0u);
  const std::string d = ctx().describe();
  std::printf("%zu operations; %s\n", total, d.c_str());
  if (has_ring(GetParam()) && resizes(d) && total > 1100) {
    EXPECT_GT(cq_size(d), 1024u) << d;
  }
}

// io_uring link chains (ringio::chain: a write, then a read of what it wrote) started
// between bursts of sleeps that grow the ring: a chain that needs more room than the CQ
// has grows it before its SQEs are taken, and every chain still runs in order.
TEST_P(RingResize, ChainsStartedWhileTheRingGrowsRunInOrder) {
  const std::string path = ::testing::TempDir() + "ringio-resize-chain-" + std::to_string(::getpid());
  constexpr int chains = 300, sleeps_per_chain = 20;
  std::vector<int> ok(chains, 0);
  run([](std::string path, std::vector<int>& ok) -> task<void> {
    auto f = co_await fs::open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return;
    scope s;
    for (int c = 0; c < chains; ++c) {
      for (int i = 0; i < sleeps_per_chain; ++i)
        s.spawn([](int i) -> task<void> { (void)co_await sleep_for(std::chrono::microseconds(50'000 + i)); }(i));
      s.spawn([](file& f, int c, int& ok) -> task<void> {
        std::array<char, 8> out{}, in{};
        std::snprintf(out.data(), out.size(), "%07d", c);
        auto [w, r] =
            co_await chain(f.write_at(std::string_view(out.data(), out.size()), 8u * c), f.read_at(in, 8u * c));
        if (w.value_or(0) == out.size() && r.value_or(0) == in.size() && in == out) ++ok;
      }(*f, c, ok[static_cast<std::size_t>(c)]));
    }
    co_await s.join();
  }(path, ok));
  ::unlink(path.c_str());
  for (int c = 0; c < chains; ++c) EXPECT_EQ(ok[static_cast<std::size_t>(c)], 1) << "chain " << c;
  const std::string d = ctx().describe();
  if (has_ring(GetParam()) && resizes(d)) {
    EXPECT_GE(cq_size(d), 8192u) << d;
  }
}

RINGIO_ALL_BACKENDS(RingResize);

// Ring resize is opt-in: on here unless asked otherwise.
std::optional<io_context> make(io_context_options o, bool resize = true) {
  o.ring_resize = resize;
  try {
    return std::optional<io_context>(std::in_place, o);
  } catch (const std::system_error&) {
    return std::nullopt;
  }
}

class RingResizeState : public ::testing::TestWithParam<backend_kind> {};

// describe() shows whether the ring grows, its current sizes and its memory; with the
// option off (or where the kernel cannot resize) the sizes are the full ones.
TEST_P(RingResizeState, DescribeShowsTheState) {
  if (!has_ring(GetParam())) GTEST_SKIP() << "the readiness backend " << to_string(GetParam()) << " has no ring";
  auto on = make({.backend = GetParam(), .quiet = true});
  auto off = make({.backend = GetParam(), .quiet = true}, false);
  if (!on || !off) GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here";
  const std::string d_on = on->describe(), d_off = off->describe();
  EXPECT_NE(d_off.find("sq 4096, cq 65536"), std::string::npos) << d_off;
  EXPECT_NE(d_off.find("ring resize off"), std::string::npos) << d_off;
  EXPECT_NE(d_off.find("ring memory "), std::string::npos) << d_off;
  EXPECT_NE(d_on.find("max in flight 65536"), std::string::npos) << d_on;
  if (d_on.find("ring resize unsupported") != std::string::npos) {
    EXPECT_NE(d_on.find("sq 4096, cq 65536"), std::string::npos) << d_on;
    GTEST_SKIP() << "this kernel does not resize rings (Linux 6.13): " << d_on;
  }
  EXPECT_NE(d_on.find("sq 256, cq 1024"), std::string::npos) << d_on;
  EXPECT_NE(d_on.find("ring resize yes (up to sq 4096, cq 65536; 0 resizes)"), std::string::npos) << d_on;

  // Sizes no larger than the start: nothing to grow, the ring has them from the start.
  auto small = make({.backend = GetParam(), .sq_entries = 8, .cq_entries = 16, .quiet = true});
  ASSERT_TRUE(small);
  EXPECT_NE(small->describe().find("sq 8, cq 16"), std::string::npos) << small->describe();
  EXPECT_NE(small->describe().find("ring resize not needed"), std::string::npos) << small->describe();
  // Without DEFER_TASKRUN the kernel cannot resize the ring.
  auto coop = make({.backend = GetParam(), .defer_taskrun = false, .quiet = true});
  ASSERT_TRUE(coop);
  EXPECT_NE(coop->describe().find("ring resize needs defer_taskrun"), std::string::npos) << coop->describe();
  EXPECT_NE(coop->describe().find("sq 4096, cq 65536"), std::string::npos) << coop->describe();
}

// The ring grows to the sizes asked for and no further: past them operations wait in
// the backlog as on a ring created at that size.
TEST_P(RingResizeState, GrowsUpToTheSizesAskedFor) {
  if (!has_ring(GetParam())) GTEST_SKIP() << "the readiness backend " << to_string(GetParam()) << " has no ring";
  auto ctx = make({.backend = GetParam(), .sq_entries = 512, .cq_entries = 2048, .quiet = true});
  if (!ctx) GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here";
  if (!resizes(ctx->describe())) GTEST_SKIP() << "the ring does not grow here: " << ctx->describe();
  constexpr int ops = 5000;
  int done = sync_wait(*ctx, []() -> task<int> {
    int done = 0;
    scope s;
    for (int i = 0; i < ops; ++i)
      s.spawn([](int& d, int i) -> task<void> {
        if (co_await sleep_for(std::chrono::microseconds(20'000 + i % 1000))) ++d;
      }(done, i));
    co_await s.join();
    co_return done;
  }());
  EXPECT_EQ(done, ops);
  const std::string d = ctx->describe();
  EXPECT_NE(d.find("sq 512, cq 2048"), std::string::npos) << d;
  EXPECT_EQ(d.find("; 0 resizes"), std::string::npos) << d;
}

// A resize the kernel refuses (RINGIO_URING_RESIZE_FAIL makes every one fail with
// ENOMEM): the ring keeps its size, stops growing, and the operations past its CQ wait
// in the backlog and still all complete; describe() says why it stopped.
TEST_P(RingResizeState, AFailedResizeKeepsTheRingAndLosesNothing) {
  if (!has_ring(GetParam())) GTEST_SKIP() << "the readiness backend " << to_string(GetParam()) << " has no ring";
  ::setenv("RINGIO_URING_RESIZE_FAIL", "12", 1);
  auto ctx = make({.backend = GetParam(), .quiet = true});
  if (!ctx || !resizes(ctx->describe())) {
    ::unsetenv("RINGIO_URING_RESIZE_FAIL");
    GTEST_SKIP() << "the ring does not grow here" << (ctx ? ": " + ctx->describe() : std::string());
  }
  constexpr int ops = 3000;
  int done = sync_wait(*ctx, []() -> task<int> {
    int done = 0;
    scope s;
    for (int i = 0; i < ops; ++i)
      s.spawn([](int& d, int i) -> task<void> {
        if (co_await sleep_for(std::chrono::microseconds(10'000 + i % 1000))) ++d;
      }(done, i));
    co_await s.join();
    co_return done;
  }());
  ::unsetenv("RINGIO_URING_RESIZE_FAIL");
  EXPECT_EQ(done, ops);
  const std::string d = ctx->describe();
  EXPECT_NE(d.find("sq 256, cq 1024"), std::string::npos) << d;
  EXPECT_NE(d.find("ring resize failed ("), std::string::npos) << d;
}

// A link chain that needs more room than the CQ has grows the ring before its SQEs are
// taken (the SQ is at its maximum here, so only the chain can make the ring grow).
TEST_P(RingResizeState, AChainGrowsTheRingBeforeItsLinks) {
  if (GetParam() != backend_kind::uring) GTEST_SKIP() << "only the io_uring completion backend links requests";
  auto ctx = make({.backend = GetParam(), .sq_entries = 256, .quiet = true});
  if (!ctx || !resizes(ctx->describe())) GTEST_SKIP() << "the ring does not grow here";
  const std::string path = ::testing::TempDir() + "ringio-resize-link-" + std::to_string(::getpid());
  std::string after;
  sync_wait(*ctx, [](std::string path, std::string& after) -> task<void> {
    auto f = co_await fs::open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return;
    scope s;
    // 1,019 sleeps in flight: one more operation fits the 1,024-entry CQ (it may post
    // three completions), a two-link chain (six) does not.
    for (int i = 0; i < 1019; ++i)
      s.spawn([]() -> task<void> { (void)co_await sleep_for(std::chrono::milliseconds(50)); }());
    std::array<char, 8> out{'l', 'i', 'n', 'k', 'e', 'd', '0', '1'}, in{};
    auto [w, r] = co_await chain(f->write_at(std::string_view(out.data(), out.size()), 0), f->read_at(in, 0));
    EXPECT_TRUE(w.value_or(0) == out.size() && r.value_or(0) == in.size() && in == out);
    after = io_context::current()->describe();
    co_await s.join();
  }(path, after));
  ::unlink(path.c_str());
  EXPECT_NE(after.find("sq 256, cq 2048"), std::string::npos) << after;
  EXPECT_NE(after.find("; 1 resizes)"), std::string::npos) << after;
}

INSTANTIATE_TEST_SUITE_P(, RingResizeState,
                         ::testing::Values(backend_kind::uring, backend_kind::epoll, backend_kind::uring_poll),
                         backend_param_name);

}  // namespace
