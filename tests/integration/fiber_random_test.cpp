// SPDX-License-Identifier: Apache-2.0
// Randomized (seeded) fiber echo: many connections, each a client fiber and a server
// fiber, with stops, shutdowns and resets injected at random points. At the end every
// fiber has finished, what each client got back (plus what is left in its socket) is
// exactly what its server echoed, a prefix of what it sent, and every stack is back.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "ringio/fiber.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/sanitizer.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

constexpr std::size_t stream_bytes = 256 * 1024;

struct connection {
  socket_pair p;
  std::vector<std::byte> stream;    // what the client sends, in order
  std::vector<std::byte> received;  // what the client got back
  std::size_t server_echoed = 0;    // bytes the server sent back
  bool reset = false;               // both directions were shut down by the chaos
  bool client_done = false, server_done = false;
  std::unique_ptr<scope> client_scope;
};

void client(connection& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::size_t off = 0;
  std::array<std::byte, 2048> buf;
  while (off < c.stream.size()) {
    std::size_t len = std::min<std::size_t>(1 + rng() % 2048, c.stream.size() - off);
    auto w = this_fiber::await(c.p.a.send_all(std::span(c.stream).subspan(off, len)));
    if (!w) break;
    off += len;
    std::size_t want = len;
    while (want > 0) {
      auto n = this_fiber::await(c.p.a.recv(std::span(buf).first(std::min(want, buf.size()))));
      if (!n || *n == 0) break;
      c.received.insert(c.received.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
      want -= *n;
    }
    if (want > 0) break;
    if (rng() % 8 == 0) this_fiber::yield();
  }
  ::shutdown(c.p.a.native_handle(), SHUT_WR);  // lets the server finish
  c.client_done = true;
}

void server(connection& c) {
  std::array<std::byte, 1500> buf;
  for (;;) {
    auto n = this_fiber::await(c.p.b.recv(buf));
    if (!n || *n == 0) break;
    auto w = this_fiber::await(c.p.b.send_all(std::span(buf).first(*n)));
    if (!w) break;
    c.server_echoed += *n;
  }
  c.server_done = true;
}

class FiberRandom : public backend_test {};

TEST_P(FiberRandom, EchoWithRandomStopsShutdownsAndResets) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  constexpr int count = 48;
  std::vector<connection> conns(count);
  for (int i = 0; i < count; ++i) conns[i].stream = random_bytes(stream_bytes, seed + static_cast<std::uint64_t>(i));
  fiber_stack_pool_trim();

  run([](std::vector<connection>& conns, std::mt19937_64& rng, std::uint64_t seed) -> task<void> {
    scope servers;
    for (std::size_t i = 0; i < conns.size(); ++i) {
      connection& c = conns[i];
      c.client_scope = std::make_unique<scope>();
      spawn_fiber(
          servers, [&c] { server(c); }, fiber_options{.stack_size = 32 * 1024});
      spawn_fiber(*c.client_scope, [&c, s = seed ^ i] { client(c, s); });
    }
    // The chaos: at random moments, stop a client, shut its sending side, or reset both.
    for (int event = 0; event < 60; ++event) {
      auto pause = std::chrono::microseconds(rng() % 2000);
      (void)co_await sleep_for(pause);
      connection& c = conns[rng() % conns.size()];
      switch (rng() % 3) {
        case 0:
          c.client_scope->request_stop();
          break;
        case 1:
          ::shutdown(c.p.a.native_handle(), SHUT_WR);
          break;
        default:
          ::shutdown(c.p.b.native_handle(), SHUT_RDWR);
          c.reset = true;
          break;
      }
    }
    for (connection& c : conns) co_await c.client_scope->join();
    co_await servers.join();
  }(conns, rng, seed));

  std::size_t reset_count = 0;
  for (int i = 0; i < count; ++i) {
    connection& c = conns[i];
    EXPECT_TRUE(c.client_done) << "connection " << i;
    EXPECT_TRUE(c.server_done) << "connection " << i;
    // Whatever the server echoed and the client did not take is still in the socket.
    std::array<std::byte, 65536> buf;
    for (;;) {
      ssize_t n = ::recv(c.p.a.native_handle(), buf.data(), buf.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      c.received.insert(c.received.end(), buf.begin(), buf.begin() + n);
    }
    ASSERT_LE(c.received.size(), c.stream.size());
    EXPECT_TRUE(std::equal(c.received.begin(), c.received.end(), c.stream.begin()))
        << "connection " << i << ": the echo is not a prefix of the stream (seed " << seed << ")";
    if (c.reset) ++reset_count;
    else EXPECT_EQ(c.received.size(), c.server_echoed) << "connection " << i << " (seed " << seed << ")";
  }
  auto st = fiber_stack_pool_stats();
  EXPECT_EQ(st.mapped - st.unmapped, st.pooled) << "every stack went back to the pool";
  std::printf("%zu of %d connections reset\n", reset_count, count);
}

RINGIO_ALL_BACKENDS(FiberRandom);

}  // namespace
