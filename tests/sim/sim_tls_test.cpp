// SPDX-License-Identifier: Apache-2.0
// TLS streams (userspace OpenSSL over simulated TCP) in seeded worlds: handshakes,
// an echo of random data in both directions at once, close_notify, over slow links
// with short transfers, and in hostile worlds with resets and refused connects. Each
// side gets exactly the other's bytes or an error; a clean end (0 from recv) only
// after every byte; nothing hangs; every socket closes. OpenSSL draws its own random
// numbers (key shares, signatures), so sizes of handshake records may vary between two
// runs of a seed: these worlds are checked for their invariants, not replayed.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ringio/sim.hpp"
#include "tls/tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// Sends `out` (then close_notify) while receiving until the peer's close_notify; the
// problem, or "".
task<std::string> talk(tls::stream& s, std::string out, std::string expect) {
  auto sender = [](tls::stream& s, const std::string& out) -> task<bool> {
    auto w = co_await s.send_all(std::as_bytes(std::span(out)));
    if (!w || *w != out.size()) co_return false;
    auto cn = co_await s.send_close_notify(30s);
    co_return static_cast<bool>(cn);
  };
  auto receiver = [](tls::stream& s, const std::string& expect) -> task<std::string> {
    std::string got;
    std::array<char, 5000> buf;
    for (;;) {
      auto n = co_await s.recv(std::as_writable_bytes(std::span(buf)));
      if (!n) {
        if (got != expect.substr(0, got.size())) co_return "bytes differ before an error";
        co_return "";
      }
      if (*n == 0) break;
      got.append(buf.data(), *n);
    }
    if (got != expect)
      co_return "a clean end after " + std::to_string(got.size()) + " of " + std::to_string(expect.size()) + " bytes";
    co_return "";
  };
  auto [sent, problem] = co_await when_all(sender(s, out), receiver(s, expect));
  (void)sent;
  co_return problem;
}

std::string random_text(std::mt19937_64& rng, std::size_t max) {
  std::string s(1 + rng() % max, '\0');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

void tls_world(sim::world& w, const tls::context& cctx, const tls::context& sctx) {
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
    auto l = stream_listener::bind(socket_address::loopback(0));
    if (!l) return;  // descriptor exhaustion of the world
    auto problem = sync_wait(ctx,
                             [](stream_listener& l, const tls::context& cctx, const tls::context& sctx,
                                std::uint64_t seed) -> task<std::string> {
                               std::mt19937_64 rng(seed);
                               std::string up = random_text(rng, 60000), down = random_text(rng, 60000);
                               auto at = *l.local_address();
                               // A refused connect leaves the accept waiting: bounded (the world would report a
                               // deadlock otherwise).
                               auto [c, s] =
                                   co_await when_all(stream_socket::connect(at), with_timeout(l.accept(), 10s));
                               if (!c || !s) co_return "";  // refused, aborted: allowed by the world
                               auto cs = tls::stream::client(cctx, std::move(*c), "localhost");
                               auto ss = tls::stream::server(sctx, std::move(*s));
                               if (!cs || !ss) co_return "stream setup failed";
                               auto [hc, hs] = co_await when_all(cs->handshake(60s), ss->handshake(60s));
                               if (!hc || !hs) co_return "";  // a reset during the handshake
                               auto [a, b] = co_await when_all(with_timeout(talk(*cs, up, down), 600s),
                                                               with_timeout(talk(*ss, down, up), 600s));
                               std::string all;
                               for (auto* r : {&a, &b}) all += *r ? **r : std::string("a side hung; ");
                               co_return all;
                             }(*l, cctx, sctx, w.seed()));
    if (!problem.empty()) throw std::runtime_error(problem);
  }
  if (w.open_sockets() != 0) throw std::runtime_error(std::to_string(w.open_sockets()) + " sockets left open");
}

}  // namespace

TEST(SimTls, SlowLinksCarryEveryByteBothWays) {
  auto cctx = make_client_context();
  auto sctx = make_server_context();
  sim::seeds_options opts;
  opts.count = 300;
  opts.check_determinism = false;  // OpenSSL's own randomness
  opts.faults.min_latency = 100us;
  opts.faults.max_latency = 10ms;
  opts.faults.buffer_bytes = 5000;
  opts.faults.short_transfer = 0.3;
  auto s = sim::run_seeds(opts, [&](sim::world& w) { tls_world(w, cctx, sctx); });
  EXPECT_FALSE(s.failure) << *s.failure;
}

TEST(SimTls, HostileWorldsNeverCorruptOrHang) {
  auto cctx = make_client_context();
  auto sctx = make_server_context();
  sim::seeds_options opts;
  opts.count = 300;
  opts.check_determinism = false;  // OpenSSL's own randomness
  opts.faults = sim::hostile();
  auto s = sim::run_seeds(opts, [&](sim::world& w) { tls_world(w, cctx, sctx); });
  EXPECT_FALSE(s.failure) << *s.failure;
}
