// SPDX-License-Identifier: Apache-2.0
// io_context_options::ring_resize: the io_uring ring starts at 256 SQ / 1,024 CQ entries
// and grows in place. Whatever the number in flight, every operation completes exactly
// once with its own result: stopped at any point of the growth, with cross-thread posts
// and wake-ups, SQPOLL, min-wait, direct descriptors, zero-copy sends, provided buffers,
// a context destroyed right after growing, many loops growing at once, CQ overflow at a
// resize and a resize the kernel refuses.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// Ring resize is opt-in (io_context_options::ring_resize): on unless asked otherwise.
std::optional<io_context> make(io_context_options o, bool resize = true) {
  o.backend = backend_kind::uring;
  o.ring_resize = resize;
  o.quiet = true;
  try {
    return std::optional<io_context>(std::in_place, o);
  } catch (const std::system_error&) {
    return std::nullopt;
  }
}

bool resizes(const std::string& d) { return d.find("ring resize yes") != std::string::npos; }

// "cq N" of describe(): the CQ's current size (0 if not found).
unsigned cq_size(const std::string& d) {
  auto at = d.find(", cq ");
  return at == std::string::npos ? 0 : static_cast<unsigned>(std::stoul(d.substr(at + 5)));
}

// "; N resizes)" of describe() (0 if not found).
unsigned resize_count(const std::string& d) {
  auto at = d.find(" resizes)");
  if (at == std::string::npos) return 0;
  auto start = d.rfind("; ", at);
  return start == std::string::npos ? 0 : static_cast<unsigned>(std::stoul(d.substr(start + 2)));
}

#define REQUIRE_GROWING_RING(ctx)                                                                          \
  do {                                                                                                     \
    if (!(ctx)) GTEST_SKIP() << "io_uring cannot start here";                                              \
    if (!resizes((ctx)->describe())) GTEST_SKIP() << "the ring does not grow here: " << (ctx)->describe(); \
  } while (0)

bool canceled(const std::error_code& e) { return e == std::errc::operation_canceled; }

// A sleep that records how it ended: 1 slept, 2 stopped; anything else is counted as a
// second completion.
task<void> recorded_sleep(int& d, std::chrono::microseconds t) {
  auto r = co_await sleep_for(t);
  d += r ? 1 : (canceled(r.error()) ? 2 : 1000);
}

// A one-byte receive that records how it ended: 1 got its own byte, 2 stopped.
task<void> recorded_recv(stream_socket& s, int& d, std::byte expect) {
  std::byte b{};
  auto r = co_await s.recv(mutable_buffer(&b, 1));
  if (r && *r == 1 && b == expect) d += 1;
  else if (!r && canceled(r.error())) d += 2;
  else d += 1000;
}

// Each operation stopped or completed, exactly once.
void expect_each_once(const std::vector<int>& done, const char* what) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < done.size(); ++i)
    if (done[i] != 1 && done[i] != 2 && bad++ < 5) ADD_FAILURE() << what << " " << i << " ended as " << done[i];
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << done.size() << " did not complete exactly once";
}

// Stops at every point of the growth: a scope of up to 30,000 long sleeps and 64
// receives is stopped after 0 to 6 loop iterations (with SQEs queued and the resize
// not yet done, during the doublings, after them). Every operation ends exactly once
// (stopped, or done for a receive whose byte came), nothing stays in flight, and the
// loop still works.
TEST(RingResizeAttack, StopAtEveryPointOfTheGrowth) {
  const std::uint64_t seed = test_seed();
  constexpr int rounds = 14, receivers = 64;
  for (int round = 0; round < rounds; ++round) {
    auto ctx = make({});
    REQUIRE_GROWING_RING(ctx);
    std::mt19937_64 rng(seed + static_cast<std::uint64_t>(round));
    const int sleeps = 500 + static_cast<int>(rng() % 30'000);
    const int iterations = round % 7;
    std::vector<int> done(static_cast<std::size_t>(sleeps + receivers), 0);
    std::vector<socket_pair> pairs(receivers);
    sync_wait(*ctx,
              [](std::vector<int>& done, std::vector<socket_pair>& pairs, int sleeps, int iterations) -> task<void> {
                scope s;
                for (int i = 0; i < sleeps; ++i) s.spawn(recorded_sleep(done[static_cast<std::size_t>(i)], 10s));
                for (int i = 0; i < receivers; ++i)
                  s.spawn(recorded_recv(pairs[static_cast<std::size_t>(i)].b,
                                        done[static_cast<std::size_t>(sleeps + i)], static_cast<std::byte>(i)));
                // Half the receivers get their byte during the growth.
                for (int i = 0; i < receivers; i += 2) {
                  const auto b = static_cast<std::byte>(i);
                  EXPECT_EQ(::send(pairs[static_cast<std::size_t>(i)].a.native_handle(), &b, 1, 0), 1);
                }
                for (int k = 0; k < iterations; ++k) (void)co_await nop();
                s.request_stop();
                co_await s.join();
              }(done, pairs, sleeps, iterations));
    expect_each_once(done, "operation");
    EXPECT_EQ(ctx->in_flight(), 0u) << ctx->describe();
    // The loop still works after the stop.
    int after = 0;
    sync_wait(*ctx, [](int& after) -> task<void> {
      scope s;
      for (int i = 0; i < 3000; ++i)
        s.spawn([](int& a) -> task<void> {
          if (co_await sleep_for(1ms)) ++a;
        }(after));
      co_await s.join();
    }(after));
    EXPECT_EQ(after, 3000) << "round " << round << ": " << ctx->describe();
    std::printf("round %d: %d sleeps, stop after %d iterations: %s\n", round, sleeps, iterations,
                ctx->describe().c_str());
  }
}

// Posts from four threads (each also waking the loop while it sleeps) land while the
// loop grows: each posted function starts a sleep, so the growth is driven by the
// posts themselves. Every post runs once and every sleep completes once; with the
// futex wake-up on and off.
class RingResizeCrossThread : public ::testing::TestWithParam<bool> {};

TEST_P(RingResizeCrossThread, PostsAndWakeUpsWhileGrowing) {
  auto ctx = make({.futex_wake = GetParam()});
  REQUIRE_GROWING_RING(ctx);
  constexpr int threads = 4, per_thread = 8000;
  const std::uint64_t seed = test_seed();
  std::vector<std::atomic<int>> ran(threads * per_thread);
  std::vector<int> slept(threads * per_thread, 0);
  std::atomic<int> finished{0};
  io_context& c = *ctx;
  std::vector<std::thread> posters;
  for (int t = 0; t < threads; ++t)
    posters.emplace_back([&, t] {
      std::mt19937_64 rng(seed + static_cast<std::uint64_t>(t));
      for (int i = 0; i < per_thread; ++i) {
        const int id = t * per_thread + i;
        const auto len = std::chrono::microseconds(1000 + rng() % 300'000);
        post(c, [&ran, &slept, &finished, &c, id, len]() noexcept {
          ran[static_cast<std::size_t>(id)].fetch_add(1);
          c.spawn([](int& d, std::chrono::microseconds len, std::atomic<int>& finished) -> task<void> {
            auto r = co_await sleep_for(len);
            d += r ? 1 : 1000;
            finished.fetch_add(1);
          }(slept[static_cast<std::size_t>(id)], len, finished));
        });
        // Pauses let the loop fall asleep, so that posts must wake it.
        if (rng() % 512 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
      }
    });
  std::thread stopper([&] {
    const auto until = std::chrono::steady_clock::now() + 120s;
    while (finished.load() < threads * per_thread && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    c.stop();
  });
  c.run();
  for (auto& t : posters) t.join();
  stopper.join();
  int bad_runs = 0, bad_sleeps = 0;
  for (std::size_t i = 0; i < ran.size(); ++i) {
    bad_runs += ran[i].load() != 1;
    bad_sleeps += slept[i] != 1;
  }
  EXPECT_EQ(bad_runs, 0) << "posts not run exactly once; " << ctx->describe();
  EXPECT_EQ(bad_sleeps, 0) << "sleeps not completed exactly once; " << ctx->describe();
  EXPECT_EQ(finished.load(), threads * per_thread);
  std::printf("%s\n", ctx->describe().c_str());
  EXPECT_GT(resize_count(ctx->describe()), 0u) << ctx->describe();
}

INSTANTIATE_TEST_SUITE_P(, RingResizeCrossThread, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? std::string("futex") : std::string("eventfd"); });

// Runs 20,000 sleeps and 200 receives at once on `c`; returns the number that did not
// complete exactly once with their result.
int twenty_thousand(io_context& c, std::uint64_t seed) {
  constexpr int timers = 20'000, receivers = 200;
  std::vector<int> done(timers + receivers, 0);
  std::vector<socket_pair> pairs(receivers);
  sync_wait(c, [](std::vector<int>& done, std::vector<socket_pair>& pairs, std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    scope s;
    for (int i = 0; i < receivers; ++i)
      s.spawn(recorded_recv(pairs[static_cast<std::size_t>(i)].b, done[static_cast<std::size_t>(timers + i)],
                            static_cast<std::byte>(i)));
    for (int i = 0; i < timers; ++i)
      s.spawn(recorded_sleep(done[static_cast<std::size_t>(i)], std::chrono::microseconds(50'000 + rng() % 200'000)));
    (void)co_await nop();
    for (int i = 0; i < receivers; ++i) {
      const auto b = static_cast<std::byte>(i);
      auto w = co_await pairs[static_cast<std::size_t>(i)].a.send(const_buffer(&b, 1));
      EXPECT_TRUE(w && *w == 1);
    }
    co_await s.join();
  }(done, pairs, seed));
  int bad = 0;
  for (int d : done) bad += d != 1;
  return bad;
}

// SQPOLL: the ring cannot grow (no DEFER_TASKRUN); it is created at its full size and
// 20,000 operations complete exactly once.
TEST(RingResizeAttack, SqpollRunsTwentyThousand) {
  auto ctx = make({.sqpoll = true});
  if (!ctx) GTEST_SKIP() << "SQPOLL cannot start here";
  const std::string d = ctx->describe();
  std::printf("%s\n", d.c_str());
  EXPECT_FALSE(resizes(d)) << d;
  EXPECT_EQ(twenty_thousand(*ctx, test_seed()), 0) << ctx->describe();
}

// min_wait: the loop batches completions while the ring grows under it.
TEST(RingResizeAttack, MinWaitRunsTwentyThousandWhileGrowing) {
  auto ctx = make({.min_wait = 500});
  REQUIRE_GROWING_RING(ctx);
  EXPECT_EQ(twenty_thousand(*ctx, test_seed()), 0) << ctx->describe();
  EXPECT_GE(cq_size(ctx->describe()), 32768u) << ctx->describe();
}

// Plain settings twice in a row on one loop: the second run finds the grown CQ (its SQ
// may still grow, if more is submitted in one iteration than the first run did).
TEST(RingResizeAttack, TwentyThousandTwiceOnOneLoop) {
  auto ctx = make({});
  REQUIRE_GROWING_RING(ctx);
  const std::uint64_t seed = test_seed();
  EXPECT_EQ(twenty_thousand(*ctx, seed), 0) << ctx->describe();
  const unsigned cq = cq_size(ctx->describe());
  EXPECT_EQ(twenty_thousand(*ctx, seed + 1), 0) << ctx->describe();
  EXPECT_EQ(cq_size(ctx->describe()), cq) << "the grown CQ was big enough: " << ctx->describe();
}

// Direct descriptors: 20,000 accepts pending on one listener (the ring grows under
// them), 2,000 clients connect and send their number; each number arrives once, on a
// direct socket; the accepts left are stopped and each ends once.
TEST(RingResizeAttack, DirectDescriptorAcceptsWhileGrowing) {
  auto ctx = make({.direct_descriptors = 4096});
  REQUIRE_GROWING_RING(ctx);
  if (ctx->describe().find("direct") == std::string::npos)
    GTEST_SKIP() << "no direct descriptors here: " << ctx->describe();
  constexpr int accepts = 20'000, clients = 2000;
  auto l = listen_loopback({.backlog = 4096, .direct_descriptors = true});
  const socket_address at = address_of(l);
  std::vector<int> got(clients, 0);
  int stopped = 0, accepted = 0, direct = 0, other = 0;
  std::thread connector;
  sync_wait(*ctx,
            [](stream_listener& l, std::vector<int>& got, int& stopped, int& accepted, int& direct, int& other,
               std::thread& connector, socket_address at) -> task<void> {
              scope s;
              scope conns(std::stop_token{});
              for (int i = 0; i < accepts; ++i)
                s.spawn([](stream_listener& l, scope& conns, std::vector<int>& got, int& stopped, int& accepted,
                           int& direct, int& other) -> task<void> {
                  auto c = co_await l.accept();
                  if (!c) {
                    if (canceled(c.error())) ++stopped;
                    else ++other;
                    co_return;
                  }
                  ++accepted;
                  if (c->is_direct()) ++direct;
                  conns.spawn([](stream_socket sock, std::vector<int>& got) -> task<void> {
                    std::uint32_t n = 0;
                    auto r = co_await sock.recv_exact(mutable_buffer(&n, sizeof n));
                    if (r && n < got.size()) ++got[n];
                    (void)co_await sock.close();
                  }(std::move(*c), got));
                }(l, conns, got, stopped, accepted, direct, other));
              (void)co_await nop();
              connector = std::thread([at] {
                sockaddr_in sa{};
                sa.sin_family = AF_INET;
                sa.sin_port = htons(at.port());
                sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                for (std::uint32_t i = 0; i < clients; ++i) {
                  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                  if (fd < 0) continue;
                  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0)
                    (void)!::send(fd, &i, sizeof i, 0);
                  ::close(fd);
                }
              });
              while (accepted + other < clients) (void)co_await sleep_for(5ms);
              co_await conns.join();
              s.request_stop();
              co_await s.join();
            }(l, got, stopped, accepted, direct, other, connector, at));
  connector.join();
  int bad = 0;
  for (int g : got) bad += g != 1;
  EXPECT_EQ(bad, 0) << "connections whose number did not arrive exactly once";
  EXPECT_EQ(accepted, clients);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(stopped + accepted + other, accepts);
  EXPECT_EQ(direct, accepted) << ctx->describe();
  EXPECT_EQ(ctx->in_flight(), 0u);
  std::printf("%s\n", ctx->describe().c_str());
}

std::pair<stream_socket, stream_socket> tcp_pair(stream_listener& l, const socket_address& at) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(at.port());
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int s = ::accept4(l.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_GE(s, 0);
  return {stream_socket(detail::fd_handle(fd)), stream_socket(detail::fd_handle(s))};
}

// Zero-copy sends (their notifications are a second completion each) between bursts of
// sleeps that grow the ring: every send completes once with all its bytes, and the
// peers receive every message, in order.
TEST(RingResizeAttack, ZeroCopySendsWhileGrowing) {
  auto ctx = make({.zero_copy_send_threshold = 1024});
  REQUIRE_GROWING_RING(ctx);
  constexpr int conns = 32, messages = 200, bursts = 8;
  constexpr std::size_t len = 8192;
  auto l = listen_loopback();
  const socket_address at = address_of(l);
  std::vector<std::pair<stream_socket, stream_socket>> pairs;
  for (int i = 0; i < conns; ++i) pairs.push_back(tcp_pair(l, at));
  std::vector<int> sent(conns * messages, 0), received(conns, 0);
  int sleeps_done = 0;
  sync_wait(*ctx,
            [](std::vector<std::pair<stream_socket, stream_socket>>& pairs, std::vector<int>& sent,
               std::vector<int>& received, int& sleeps_done) -> task<void> {
              scope s;
              for (int c = 0; c < conns; ++c) {
                s.spawn([](stream_socket& out, int c, std::vector<int>& sent) -> task<void> {
                  std::vector<std::byte> buf(len);
                  for (int m = 0; m < messages; ++m) {
                    for (std::size_t k = 0; k < len; ++k) buf[k] = static_cast<std::byte>((c * 7 + m * 13 + k) & 0xff);
                    auto w = co_await out.send_all(const_buffer(buf.data(), buf.size()));
                    sent[static_cast<std::size_t>(c * messages + m)] += (w && *w == len) ? 1 : 1000;
                    // Overwritten at once: the send completed, so the kernel reads it no more.
                    std::memset(buf.data(), 0xee, buf.size());
                  }
                }(pairs[static_cast<std::size_t>(c)].first, c, sent));
                s.spawn([](stream_socket& in, int c, int& received) -> task<void> {
                  std::vector<std::byte> buf(len);
                  for (int m = 0; m < messages; ++m) {
                    auto r = co_await in.recv_exact(mutable_buffer(buf.data(), buf.size()));
                    if (!r) co_return;
                    bool ok = true;
                    for (std::size_t k = 0; k < len && ok; ++k)
                      ok = buf[k] == static_cast<std::byte>((c * 7 + m * 13 + k) & 0xff);
                    if (!ok) co_return;
                    ++received;
                  }
                }(pairs[static_cast<std::size_t>(c)].second, c, received[static_cast<std::size_t>(c)]));
              }
              for (int b = 0; b < bursts; ++b) {
                for (int i = 0; i < 1000 << (b % 5); ++i)
                  s.spawn([](int& d) -> task<void> {
                    if (co_await sleep_for(std::chrono::microseconds(2000 + d % 7))) ++d;
                  }(sleeps_done));
                (void)co_await sleep_for(1ms);
              }
              co_await s.join();
            }(pairs, sent, received, sleeps_done));
  int bad = 0;
  for (int x : sent) bad += x != 1;
  EXPECT_EQ(bad, 0) << "sends not completed exactly once with all their bytes";
  for (int c = 0; c < conns; ++c) EXPECT_EQ(received[static_cast<std::size_t>(c)], messages) << "connection " << c;
  const std::string d = ctx->describe();
  std::printf("%s; zero-copy sends %llu (copied %llu)\n", d.c_str(),
              static_cast<unsigned long long>(ctx->stats().zero_copy_sends),
              static_cast<unsigned long long>(ctx->stats().zero_copy_copied));
  EXPECT_GT(resize_count(d), 0u) << d;
}

// Multishot receivers through a provided-buffer pool: each connection's bytes arrive
// complete and in order while bursts of sleeps grow the ring under the multishot
// requests (their completions sit in the CQ during the resize).
TEST(RingResizeAttack, MultishotReceiversKeepOrderWhileGrowing) {
  auto ctx = make({});
  REQUIRE_GROWING_RING(ctx);
  constexpr int conns = 32;
  constexpr std::size_t total = 256 * 1024;
  const std::uint64_t seed = test_seed();
  std::vector<socket_pair> pairs(conns);
  std::vector<std::size_t> in_order(conns, 0);
  std::vector<int> broken(conns, 0);
  int sleeps = 0;
  sync_wait(*ctx,
            [](std::vector<socket_pair>& pairs, std::vector<std::size_t>& in_order, std::vector<int>& broken,
               int& sleeps, std::uint64_t seed) -> task<void> {
              buffer_pool pool(*io_context::current(), 256, 2048);
              scope s;
              for (int c = 0; c < conns; ++c) {
                s.spawn([](socket_pair& p, buffer_pool& pool, std::size_t& at,
                           int& broken) -> task<void> {
                  multishot_receiver rx(p.b, pool);
                  while (at < total) {
                    auto b = co_await rx.next();
                    if (!b || b->empty()) {
                      broken = 1;
                      co_return;
                    }
                    for (std::byte x : b->bytes()) {
                      if (x != static_cast<std::byte>((at * 31 + at / 251) & 0xff)) {
                        broken = 2;
                        co_return;
                      }
                      ++at;
                    }
                  }
                }(pairs[static_cast<std::size_t>(c)], pool, in_order[static_cast<std::size_t>(c)],
                                        broken[static_cast<std::size_t>(c)]));
                s.spawn([](socket_pair& p, std::uint64_t seed) -> task<void> {
                  std::mt19937_64 rng(seed);
                  std::vector<std::byte> all(total);
                  for (std::size_t i = 0; i < total; ++i) all[i] = static_cast<std::byte>((i * 31 + i / 251) & 0xff);
                  std::size_t at = 0;
                  while (at < total) {
                    const std::size_t n = std::min<std::size_t>(total - at, 1 + rng() % 9000);
                    auto w = co_await p.a.send_all(const_buffer(all.data() + at, n));
                    if (!w) co_return;
                    at += n;
                    if (rng() % 4 == 0) (void)co_await sleep_for(std::chrono::microseconds(rng() % 500));
                  }
                }(pairs[static_cast<std::size_t>(c)], seed + static_cast<std::uint64_t>(c)));
              }
              for (int b = 0; b < 12; ++b) {
                for (int i = 0; i < 700 << (b % 6); ++i)
                  s.spawn([](int& d) -> task<void> {
                    if (co_await sleep_for(std::chrono::microseconds(1000 + d % 1000))) ++d;
                  }(sleeps));
                (void)co_await sleep_for(std::chrono::microseconds(300));
              }
              co_await s.join();
            }(pairs, in_order, broken, sleeps, seed));
  for (int c = 0; c < conns; ++c) {
    EXPECT_EQ(broken[static_cast<std::size_t>(c)], 0)
        << "connection " << c << " at byte " << in_order[static_cast<std::size_t>(c)];
    EXPECT_EQ(in_order[static_cast<std::size_t>(c)], total) << "connection " << c;
  }
  std::printf("%s\n", ctx->describe().c_str());
  EXPECT_GT(resize_count(ctx->describe()), 0u) << ctx->describe();
}

// The context destroyed with 30,000 sleeps and 500 receives in flight right after the
// ring grew for them: every operation ends once, stopped.
TEST(RingResizeAttack, DestroyedRightAfterGrowingWithThirtyThousandInFlight) {
  constexpr int timers = 30'000, receivers = 500;
  std::vector<int> done(timers + receivers, 0);
  std::vector<socket_pair> pairs(receivers);
  std::string before;
  {
    auto ctx = make({});
    REQUIRE_GROWING_RING(ctx);
    for (int i = 0; i < timers; ++i) ctx->spawn(recorded_sleep(done[static_cast<std::size_t>(i)], 60s));
    for (int i = 0; i < receivers; ++i)
      ctx->spawn(recorded_recv(pairs[static_cast<std::size_t>(i)].b, done[static_cast<std::size_t>(timers + i)],
                               std::byte{1}));
    sync_wait(*ctx, []() -> task<void> { (void)co_await nop(); }());
    before = ctx->describe();
    EXPECT_GE(ctx->in_flight(), std::size_t{timers}) << before;
  }
  std::printf("before destruction: %s\n", before.c_str());
  int stopped = 0, bad = 0;
  for (int d : done) {
    stopped += d == 2;
    bad += d != 2;
  }
  EXPECT_EQ(bad, 0) << stopped << " stopped of " << done.size();
}

// Sixteen loops on sixteen threads, each growing under 10,000 sleeps and 64 receives,
// and each posting to its neighbour while the neighbour grows (ring-to-ring wake-ups).
TEST(RingResizeAttack, SixteenLoopsGrowingAtOnce) {
  static constexpr int loops = 16, timers = 10'000, receivers = 64, posts = 2000;
  std::vector<std::unique_ptr<io_context>> ctxs;
  for (int i = 0; i < loops; ++i) {
    try {
      ctxs.push_back(std::make_unique<io_context>(
          io_context_options{.backend = backend_kind::uring, .ring_resize = true, .quiet = true}));
    } catch (const std::system_error&) {
      GTEST_SKIP() << "io_uring cannot start here";
    }
    if (!resizes(ctxs.back()->describe())) GTEST_SKIP() << "the ring does not grow here";
  }
  const std::uint64_t seed = test_seed();
  std::vector<std::vector<int>> done(loops, std::vector<int>(timers + receivers, 0));
  std::vector<std::atomic<int>> posted(loops * posts);
  std::atomic<int> loops_done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < loops; ++t)
    threads.emplace_back([&, t] {
      io_context& c = *ctxs[static_cast<std::size_t>(t)];
      io_context& next = *ctxs[static_cast<std::size_t>((t + 1) % loops)];
      std::vector<socket_pair> pairs(receivers);
      sync_wait(c,
                [](std::vector<int>& done, std::vector<socket_pair>& pairs, std::vector<std::atomic<int>>& posted,
                   io_context& next, int t, std::uint64_t seed, std::atomic<int>& loops_done) -> task<void> {
                  std::mt19937_64 rng(seed);
                  scope s;
                  for (int i = 0; i < receivers; ++i)
                    s.spawn(recorded_recv(pairs[static_cast<std::size_t>(i)].b,
                                          done[static_cast<std::size_t>(timers + i)], static_cast<std::byte>(i)));
                  for (int i = 0; i < timers; ++i) {
                    s.spawn(recorded_sleep(done[static_cast<std::size_t>(i)],
                                           std::chrono::microseconds(20'000 + rng() % 100'000)));
                    if (i % 5 == 0) {
                      const int id = t * posts + i / 5;
                      post(next, [&posted, id]() noexcept { posted[static_cast<std::size_t>(id)].fetch_add(1); });
                    }
                    if (i % 2500 == 0) (void)co_await nop();
                  }
                  for (int i = 0; i < receivers; ++i) {
                    const auto b = static_cast<std::byte>(i);
                    auto w = co_await pairs[static_cast<std::size_t>(i)].a.send(const_buffer(&b, 1));
                    EXPECT_TRUE(w && *w == 1);
                  }
                  co_await s.join();
                  // Keep running until every loop is done, so that posts to this one still run.
                  loops_done.fetch_add(1);
                  while (loops_done.load() < loops) (void)co_await sleep_for(1ms);
                  (void)co_await sleep_for(20ms);
                }(done[static_cast<std::size_t>(t)], pairs, posted, next, t, seed + static_cast<std::uint64_t>(t),
                                                                                              loops_done));
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < loops; ++t) {
    int bad = 0;
    for (int d : done[static_cast<std::size_t>(t)]) bad += d != 1;
    EXPECT_EQ(bad, 0) << "loop " << t << ": " << ctxs[static_cast<std::size_t>(t)]->describe();
    EXPECT_GE(cq_size(ctxs[static_cast<std::size_t>(t)]->describe()), 16384u);
  }
  int bad_posts = 0;
  for (auto& p : posted) bad_posts += p.load() != 1;
  EXPECT_EQ(bad_posts, 0) << "posts between loops not run exactly once";
}

// Completions beyond the CQ (max_in_flight above the CQ: the kernel keeps the overflow
// in its own list) at the moment of a resize: 30,000 NOPs and 5,000 receives with
// deadlines (three completions each) started at once. Each ends once with its result.
TEST(RingResizeAttack, CqOverflowAtAResize) {
  for (unsigned max_cq : {2048u, 65536u}) {
    auto ctx = make({.cq_entries = max_cq, .max_in_flight = 200'000});
    REQUIRE_GROWING_RING(ctx);
    const int nops = 30'000, timed = 5000;
    std::vector<int> done(nops + timed, 0);
    std::vector<socket_pair> pairs(100);
    sync_wait(*ctx, [](std::vector<int>& done, std::vector<socket_pair>& pairs, int nops, int timed) -> task<void> {
      scope s;
      for (int i = 0; i < timed; ++i)
        s.spawn([](stream_socket& sock, int& d) -> task<void> {
          std::byte b{};
          auto r = co_await with_timeout(sock.recv(mutable_buffer(&b, 1), MSG_PEEK), 30ms);
          d += r ? 1 : (r.error() == std::errc::timed_out ? 2 : 1000);
        }(pairs[static_cast<std::size_t>(i % 100)].b, done[static_cast<std::size_t>(nops + i)]));
      for (int i = 0; i < nops; ++i)
        s.spawn([](int& d) -> task<void> { d += (co_await nop()) ? 1 : 1000; }(done[static_cast<std::size_t>(i)]));
      // A watchdog stops what is still pending after 20 s (a lost completion then shows
      // as a stopped operation instead of a hang).
      scope watchdog;
      watchdog.spawn([](scope& s, std::vector<int>& done) -> task<void> {
        const auto until = std::chrono::steady_clock::now() + 20s;
        auto pending = [&done] {
          for (int d : done)
            if (d == 0) return true;
          return false;
        };
        while (pending() && std::chrono::steady_clock::now() < until) (void)co_await sleep_for(10ms);
        s.request_stop();
      }(s, done));
      co_await s.join();
      co_await watchdog.join();
    }(done, pairs, nops, timed));
    int bad = 0;
    for (std::size_t i = 0; i < done.size(); ++i)
      bad += i < static_cast<std::size_t>(nops) ? done[i] != 1 : done[i] != 2;
    EXPECT_EQ(bad, 0) << "max cq " << max_cq << ": " << ctx->describe();
    EXPECT_EQ(ctx->in_flight(), 0u);
    std::printf("max cq %u: %s\n", max_cq, ctx->describe().c_str());
  }
}

// Receives with deadlines (with_timeout: a linked timeout, two SQEs each) started at
// once on an empty socket, enough to fill the starting SQ (128 x 2 = 256) or to need a
// larger CQ: each ends once with timed_out shortly after its 30 ms deadline. A watchdog
// stops them after 10 s so that a lost completion shows as a count instead of a hang.
struct timed_outcome {
  int timed_out = 0, stopped = 0, other = 0, ended = 0;
};

timed_outcome timed_receives(io_context& c, int n, bool with_deadline) {
  socket_pair p;
  timed_outcome out;
  sync_wait(c, [](stream_socket& s, timed_outcome& out, int n, bool with_deadline) -> task<void> {
    scope ops;
    for (int i = 0; i < n; ++i)
      ops.spawn([](stream_socket& s, timed_outcome& out, bool with_deadline) -> task<void> {
        std::byte b{};
        auto r = with_deadline ? co_await with_timeout(s.recv(mutable_buffer(&b, 1), MSG_PEEK), 30ms)
                               : co_await s.recv(mutable_buffer(&b, 1), MSG_PEEK);
        ++out.ended;
        if (!r && r.error() == std::errc::timed_out) ++out.timed_out;
        else if (!r && canceled(r.error())) ++out.stopped;
        else ++out.other;
      }(s, out, with_deadline));
    scope watchdog;
    watchdog.spawn([](scope& ops, int& ended, int n, bool with_deadline) -> task<void> {
      const auto until = std::chrono::steady_clock::now() + (with_deadline ? 10s : 300ms);
      while (ended < n && std::chrono::steady_clock::now() < until) (void)co_await sleep_for(5ms);
      ops.request_stop();
    }(ops, out.ended, n, with_deadline));
    co_await ops.join();
    co_await watchdog.join();
  }(p.b, out, n, with_deadline));
  return out;
}

class RingResizeLinkedTimeouts : public ::testing::TestWithParam<int> {};

TEST_P(RingResizeLinkedTimeouts, EachReceiveTimesOutOnce) {
  const int n = GetParam();
  for (bool resize : {false, true}) {
    auto ctx = make({}, resize);
    if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
    if (resize && !resizes(ctx->describe())) GTEST_SKIP() << "the ring does not grow here: " << ctx->describe();
    const timed_outcome o = timed_receives(*ctx, n, true);
    EXPECT_EQ(o.timed_out, n) << "ring_resize " << resize << ": " << n << " receives with deadlines: " << o.timed_out
                              << " timed out, " << o.stopped << " still pending after 10 s (stopped), " << o.other
                              << " other; " << ctx->describe();
    EXPECT_EQ(o.ended, n);
    EXPECT_EQ(ctx->in_flight(), 0u) << ctx->describe();
  }
}

INSTANTIATE_TEST_SUITE_P(, RingResizeLinkedTimeouts, ::testing::Values(127, 128, 129, 400, 2000),
                         [](const auto& i) { return "n" + std::to_string(i.param); });

// The same numbers of plain receives (one SQE each; 256 fill the starting SQ), stopped
// after 300 ms: each ends once, stopped.
TEST(RingResizeAttack, PlainReceivesFillingTheSqEndOnce) {
  for (int n : {255, 256, 257, 600, 3000}) {
    auto ctx = make({});
    REQUIRE_GROWING_RING(ctx);
    const timed_outcome o = timed_receives(*ctx, n, false);
    EXPECT_EQ(o.stopped, n) << n << " receives: " << o.stopped << " stopped, " << o.other << " other, " << o.ended
                            << " ended; " << ctx->describe();
    EXPECT_EQ(ctx->in_flight(), 0u) << ctx->describe();
  }
}

// A link chain (a write, then a read of what it wrote) whose two SQEs straddle the end
// of the starting SQ: 253 to 256 receives are queued first in the same iteration. The
// chain completes in order with both results, within 10 s.
TEST(RingResizeAttack, ChainStraddlingTheEndOfTheStartingSq) {
  const std::string path = ::testing::TempDir() + "ringio-resize-straddle-" + std::to_string(::getpid());
  for (int before : {253, 254, 255, 256}) {
    auto ctx = make({});
    REQUIRE_GROWING_RING(ctx);
    socket_pair p;
    bool ok = false, finished = false;
    sync_wait(*ctx, [](std::string path, stream_socket& s, int before, bool& ok, bool& finished) -> task<void> {
      auto f = co_await fs::open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
      EXPECT_TRUE(f);
      if (!f) co_return;
      scope ops;
      for (int i = 0; i < before; ++i)
        ops.spawn([](stream_socket& s) -> task<void> {
          std::byte b{};
          (void)co_await s.recv(mutable_buffer(&b, 1), MSG_PEEK);
        }(s));
      ops.spawn([](file& f, bool& ok, bool& finished) -> task<void> {
        std::array<char, 8> out{'s', 't', 'r', 'a', 'd', 'd', 'l', 'e'}, in{};
        auto [w, r] = co_await chain(f.write_at(std::string_view(out.data(), out.size()), 0), f.read_at(in, 0));
        ok = w.value_or(0) == out.size() && r.value_or(0) == in.size() && in == out;
        finished = true;
      }(*f, ok, finished));
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (!finished && std::chrono::steady_clock::now() < until) (void)co_await sleep_for(5ms);
      ops.request_stop();
      co_await ops.join();
    }(path, p.b, before, ok, finished));
    ::unlink(path.c_str());
    EXPECT_TRUE(finished) << before << " receives before the chain: still pending after 10 s; " << ctx->describe();
    EXPECT_TRUE(ok) << before << " receives before the chain; " << ctx->describe();
    EXPECT_EQ(ctx->in_flight(), 0u);
  }
}

// A resize the kernel refuses (RINGIO_URING_RESIZE_FAIL=12, documented for tests):
// 20,000 sleeps and 200 receives, then a stopped burst, posts from another thread and
// a further burst: each completes once, and the ring keeps its size.
TEST(RingResizeAttack, FailingResizeUnderEverything) {
  // Set for the whole test: every resize attempt fails.
  struct fail_resizes {
    fail_resizes() { ::setenv("RINGIO_URING_RESIZE_FAIL", "12", 1); }
    ~fail_resizes() { ::unsetenv("RINGIO_URING_RESIZE_FAIL"); }
  } failing;
  auto ctx = make({});
  REQUIRE_GROWING_RING(ctx);
  EXPECT_EQ(twenty_thousand(*ctx, test_seed()), 0) << ctx->describe();
  const std::string d = ctx->describe();
  EXPECT_NE(d.find("sq 256, cq 1024"), std::string::npos) << d;
  EXPECT_NE(d.find("ring resize failed ("), std::string::npos) << d;
  // A stopped burst.
  std::vector<int> done(5000, 0);
  sync_wait(*ctx, [](std::vector<int>& done) -> task<void> {
    scope s;
    for (auto& d : done) s.spawn(recorded_sleep(d, 10s));
    (void)co_await nop();
    s.request_stop();
    co_await s.join();
  }(done));
  expect_each_once(done, "stopped sleep");
  // Posts from another thread into the loop while it carries 4,000 sleeps.
  std::atomic<int> ran{0};
  io_context& c = *ctx;
  std::thread poster([&] {
    for (int i = 0; i < 10'000; ++i) post(c, [&ran]() noexcept { ran.fetch_add(1); });
  });
  int slept = 0;
  sync_wait(*ctx, [](int& slept, std::atomic<int>& ran) -> task<void> {
    scope s;
    for (int i = 0; i < 4000; ++i)
      s.spawn([](int& d) -> task<void> { d += (co_await sleep_for(5ms)) ? 1 : 1000; }(slept));
    co_await s.join();
    while (ran.load() < 10'000) (void)co_await sleep_for(1ms);
  }(slept, ran));
  poster.join();
  EXPECT_EQ(slept, 4000);
  EXPECT_EQ(ran.load(), 10'000);
  EXPECT_EQ(ctx->in_flight(), 0u);
}

// Seeded random bursts on one loop: NOPs, sleeps, receives (data sent, or stopped),
// receives with deadlines that expire, posts from another thread, scope stops at random
// iterations. At the end every operation ended once and as expected, and nothing is
// in flight.
TEST(RingResizeAttack, SeededRandomBursts) {
  const std::uint64_t seed = test_seed();
  auto ctx = make({.max_in_flight = (seed & 1) ? 0u : 100'000u});
  REQUIRE_GROWING_RING(ctx);
  std::printf("max_in_flight %s\n", (seed & 1) ? "default" : "100000");
  constexpr int rounds = 12, receivers = 128;
  std::vector<socket_pair> pairs(receivers);
  // expect: 1 done, 2 stopped, 3 timed out, 4 done or stopped.
  struct rec {
    int got = 0;
    int expect = 0;
  };
  std::vector<rec> recs;
  recs.reserve(400'000);
  // Another thread posts all along (wake-ups while the loop sleeps and grows).
  constexpr int posted = 50'000;
  std::atomic<int> posted_ran{0};
  io_context& c = *ctx;
  std::thread poster([&c, &posted_ran, seed] {
    std::mt19937_64 rng(seed + 7);
    for (int i = 0; i < posted; ++i) {
      post(c, [&posted_ran]() noexcept { posted_ran.fetch_add(1); });
      if (rng() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    }
  });
  sync_wait(*ctx,
            [](std::vector<socket_pair>& pairs, std::vector<rec>& recs, std::uint64_t seed, io_context& c,
               std::atomic<int>& posted_ran) -> task<void> {
              std::mt19937_64 rng(seed);
              for (int round = 0; round < rounds; ++round) {
                scope keep;
                scope stopped;
                const int n = 1 + static_cast<int>(rng() % 25'000);
                int next_pair = 0;
                for (int i = 0; i < n; ++i) {
                  recs.push_back({});
                  rec& r = recs.back();
                  switch (rng() % 6) {
                    case 0:
                      r.expect = 1;
                      keep.spawn([](int& d) -> task<void> { d += (co_await nop()) ? 1 : 1000; }(r.got));
                      break;
                    case 1:
                      r.expect = 1;
                      keep.spawn([](int& d, int us) -> task<void> {
                        d += (co_await sleep_for(std::chrono::microseconds(us))) ? 1 : 1000;
                      }(r.got, static_cast<int>(rng() % 20'000)));
                      break;
                    case 2:
                      r.expect = 2;
                      stopped.spawn(recorded_sleep(r.got, 30s));
                      break;
                    case 3:
                      if (next_pair < receivers - 1) {
                        socket_pair& p = pairs[static_cast<std::size_t>(next_pair)];
                        const auto b = static_cast<std::byte>(next_pair++);
                        r.expect = 1;
                        keep.spawn(recorded_recv(p.b, r.got, b));
                        keep.spawn([](socket_pair& p, std::byte b, int us) -> task<void> {
                          (void)co_await sleep_for(std::chrono::microseconds(us));
                          auto w = co_await p.a.send(const_buffer(&b, 1));
                          EXPECT_TRUE(w && *w == 1);
                        }(p, b, static_cast<int>(rng() % 5000)));
                      } else {
                        r.expect = 1;
                        keep.spawn([](int& d) -> task<void> { d += (co_await nop()) ? 1 : 1000; }(r.got));
                      }
                      break;
                    case 4:
                      r.expect = 3;
                      keep.spawn([](stream_socket& s, int& d, int us) -> task<void> {
                        std::byte b{};
                        auto x = co_await with_timeout(s.recv(mutable_buffer(&b, 1), MSG_PEEK),
                                                       std::chrono::microseconds(us));
                        d += x ? 1000 : (x.error() == std::errc::timed_out ? 3 : 1000);
                      }(pairs[static_cast<std::size_t>(receivers - 1)].b, r.got, 1 + static_cast<int>(rng() % 10'000)));
                      break;
                    default:
                      // A post to this loop from its own thread.
                      r.expect = 1;
                      post(c, [&d = r.got]() noexcept { ++d; });
                      break;
                  }
                  if (rng() % 4000 == 0) (void)co_await nop();
                }
                const int wait = static_cast<int>(rng() % 4);
                for (int k = 0; k < wait; ++k) (void)co_await nop();
                stopped.request_stop();
                co_await stopped.join();
                // A watchdog stops what is still pending after 20 s: a lost completion then shows
                // as an operation that ended wrongly instead of a hang.
                bool joined = false;
                scope watchdog;
                watchdog.spawn([](scope& keep, bool& joined) -> task<void> {
                  const auto until = std::chrono::steady_clock::now() + 20s;
                  while (!joined && std::chrono::steady_clock::now() < until) (void)co_await sleep_for(10ms);
                  if (!joined) keep.request_stop();
                }(keep, joined));
                co_await keep.join();
                joined = true;
                co_await watchdog.join();
                // The last receiver's socket stays empty for the deadlines; the others are
                // drained for the next round.
                for (int i = 0; i < next_pair; ++i) {
                  socket_pair& p = pairs[static_cast<std::size_t>(i)];
                  p.a = stream_socket();
                  p.b = stream_socket();
                  p = socket_pair();
                }
              }
              const auto until = std::chrono::steady_clock::now() + 60s;
              while (posted_ran.load() < 50'000 && std::chrono::steady_clock::now() < until)
                (void)co_await sleep_for(1ms);
            }(pairs, recs, seed, c, posted_ran));
  poster.join();
  int bad = 0;
  for (std::size_t i = 0; i < recs.size(); ++i)
    if (recs[i].got != recs[i].expect && bad++ < 5)
      ADD_FAILURE() << "operation " << i << " expected " << recs[i].expect << " got " << recs[i].got;
  EXPECT_EQ(bad, 0) << recs.size() << " operations; " << ctx->describe();
  EXPECT_EQ(posted_ran.load(), posted);
  EXPECT_EQ(ctx->in_flight(), 0u);
  std::printf("%zu operations; %s\n", recs.size(), ctx->describe().c_str());
}

}  // namespace
