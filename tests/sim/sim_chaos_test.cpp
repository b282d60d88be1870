// SPDX-License-Identifier: Apache-2.0
// Seeded chaos in simulated worlds: 4-16 connections per world, each a sender of random
// chunks (send or send_all, each bounded by a random timeout) and a receiver of random
// reads (recv, recv_exact, buffered lines... bounded by random timeouts, cancelled
// through the socket now and then), over a network with short transfers, latency spread
// and, in hostile worlds, resets. Invariants at the end of each world: every receiver got
// exactly a prefix of what its sender says it sent — all of it when neither side failed —
// no operation is left in flight and every socket is closed.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "ringio/sim.hpp"
#include "support/sanitizer.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

struct stream_record {
  std::string sent;      // what the sender's operations report as sent
  std::string received;  // what the receiver's operations returned
  bool failed = false;   // either side met an error (a reset, a refused connect)
};

task<void> sender(stream_socket& s, stream_record& r, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int chunks = 1 + static_cast<int>(rng() % 20);
  for (int i = 0; i < chunks && !r.failed; ++i) {
    const std::size_t size = 1 + rng() % 6000;  // one draw per statement: the order is defined
    std::string chunk(size, static_cast<char>('a' + rng() % 26));
    const auto limit = std::chrono::microseconds(rng() % 3000);
    if (rng() % 2 == 0) {
      auto w = co_await with_timeout(s.send_all(std::as_bytes(std::span(chunk))), limit);
      if (w) r.sent += chunk.substr(0, *w);
      else if (w.error() != std::errc::timed_out) r.failed = true;
    } else {
      auto w = co_await with_timeout(s.send(std::as_bytes(std::span(chunk))), limit);
      if (w) r.sent += chunk.substr(0, *w);
      else if (w.error() != std::errc::timed_out) r.failed = true;
    }
  }
  if (!r.failed && !co_await s.shutdown()) r.failed = true;
}

task<void> receiver(stream_socket& s, stream_record& r, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::array<std::byte, 8192> buf;
  for (;;) {
    const std::size_t want = 1 + rng() % buf.size();
    const auto limit = std::chrono::microseconds(rng() % 5000);
    if (rng() % 3 == 0) {
      auto n = co_await with_timeout(s.recv_exact(std::span(buf).first(want)), limit);
      if (n) {
        r.received.append(reinterpret_cast<const char*>(buf.data()), *n);
        if (*n < want && *n == 0) co_return;  // end of stream
        if (*n < want) continue;              // stopped part-way or the stream ended: read on
      } else if (n.error() != std::errc::timed_out) {
        r.failed = true;
        co_return;
      }
    } else {
      auto n = co_await with_timeout(s.recv(std::span(buf).first(want)), limit);
      if (n) {
        if (*n == 0) co_return;
        r.received.append(reinterpret_cast<const char*>(buf.data()), *n);
      } else if (n.error() != std::errc::timed_out) {
        r.failed = true;
        co_return;
      }
    }
  }
}

void chaos_world(sim::world& w) {
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
    auto l = stream_listener::bind(socket_address::loopback(0));
    if (!l) return;  // descriptor exhaustion of the world
    std::mt19937_64 rng(w.seed());
    std::vector<stream_record> records(4 + rng() % 13);
    auto problem = sync_wait(
        ctx, [](stream_listener& l, std::vector<stream_record>& records, std::uint64_t seed) -> task<std::string> {
          // Connections one at a time, so that each accepted socket is its client's peer.
          std::vector<stream_socket> clients(records.size()), servers(records.size());
          for (std::size_t i = 0; i < records.size(); ++i) {
            auto [c, a] = co_await when_all(stream_socket::connect(*l.local_address()), with_timeout(l.accept(), 10s));
            if (c && a) {
              clients[i] = std::move(*c);
              servers[i] = std::move(*a);
            } else {
              records[i].failed = true;  // refused, aborted: the world's faults
              if (c && !a) break;        // an accept that failed left a client behind: stop here
            }
          }
          scope all;
          for (std::size_t i = 0; i < records.size(); ++i) {
            if (!clients[i].is_open()) continue;
            all.spawn([](stream_socket& c, stream_socket& a, stream_record& r, std::uint64_t seed) -> task<void> {
              co_await when_all(sender(c, r, seed), receiver(a, r, seed * 31 + 7));
            }(clients[i], servers[i], records[i], seed * 1000 + i));
          }
          co_await all.join();
          std::string out;
          for (const auto& r : records) {
            if (r.received != r.sent.substr(0, r.received.size())) {
              std::size_t i = 0;
              while (i < r.received.size() && i < r.sent.size() && r.received[i] == r.sent[i]) ++i;
              out += "bytes differ at " + std::to_string(i) + " (received " + std::to_string(r.received.size()) +
                     ", sent " + std::to_string(r.sent.size()) + "); ";
            } else if (!r.failed && r.received.size() != r.sent.size())
              out += "lost " + std::to_string(r.sent.size() - r.received.size()) + " bytes without an error; ";
          }
          if (io_context::current()->in_flight() != 0) out += "operations left in flight; ";
          co_return out;
        }(*l, records, w.seed()));
    if (!problem.empty()) throw std::runtime_error(problem);
  }
  if (w.open_sockets() != 0) throw std::runtime_error(std::to_string(w.open_sockets()) + " sockets left open");
}

}  // namespace

TEST(SimChaos, SlowLinksAndRandomStopsKeepEveryStreamExact) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(1500);
  opts.faults.min_latency = 10us;
  opts.faults.max_latency = 3ms;
  opts.faults.buffer_bytes = 6000;
  opts.faults.short_transfer = 0.3;
  auto s = sim::run_seeds(opts, chaos_world);
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
  std::printf("%zu worlds, %llu operations, %.2f real s\n", s.worlds, static_cast<unsigned long long>(s.operations),
              std::chrono::duration<double>(s.real_time).count());
}

TEST(SimChaos, HostileWorldsKeepEveryStreamAPrefix) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(1500);
  opts.faults = sim::hostile();
  auto s = sim::run_seeds(opts, chaos_world);
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
  std::printf("%zu worlds, %llu operations, %.2f real s\n", s.worlds, static_cast<unsigned long long>(s.operations),
              std::chrono::duration<double>(s.real_time).count());
}
