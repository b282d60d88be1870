// SPDX-License-Identifier: Apache-2.0
// The proxy example's own code (examples/tcp_proxy.cpp, its forward()) in seeded
// simulated worlds: clients echo random data through the proxy to an echo backend
// over slow links with short transfers, and in hostile worlds with resets, refused
// connects and aborted accepts. Each client gets back exactly what it sent, or an
// error (never other bytes, never a hang), and every socket closes.
#define main tcp_proxy_main  // the example's main() is not this test's
#include "../../examples/tcp_proxy.cpp"
#undef main

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <string>

#include "ringio/sim.hpp"
#include "sim/echo_exchange.hpp"
#include "support/sanitizer.hpp"

namespace {

// forward() reports every connection on stdout and stderr: quiet while the worlds run.
class quiet_output {
 public:
  quiet_output() {
    std::fflush(stdout);
    std::fflush(stderr);
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::close(null);
  }
  ~quiet_output() {
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(out_, 1);
    ::dup2(err_, 2);
    ::close(out_);
    ::close(err_);
  }

 private:
  int out_ = ::dup(1);
  int err_ = ::dup(2);
};

task<void> echo_backend(stream_listener& l) {
  scope conns;
  for (;;) {
    auto s = co_await l.accept();
    if (!s && s.error() == std::errc::operation_canceled) break;
    if (!s) continue;
    conns.spawn([](stream_socket s) -> task<void> {
      std::array<std::byte, 1500> buf;
      for (;;) {
        auto n = co_await s.recv(buf);
        if (!n || *n == 0) co_return;
        auto w = co_await s.send_all(std::span(buf).first(*n));
        if (!w || *w != *n) co_return;
      }
    }(std::move(*s)));
  }
  co_await conns.join();
}

task<void> proxy(stream_listener& l, socket_address backend) {
  scope conns;
  for (;;) {
    auto s = co_await l.accept();
    if (!s && s.error() == std::errc::operation_canceled) break;
    if (s) conns.spawn(forward(std::move(*s), backend));
  }
  co_await conns.join();
}

// "" when the echo was exact or the exchange failed with an error.
task<std::string> client(socket_address at, std::string data) {
  auto s = co_await stream_socket::connect(at);
  if (!s) co_return "";
  auto [sent, got] = co_await ringio_test::echo_exchange(*s, data);
  if (!got) co_return "";
  if (*got != data.substr(0, got->size())) co_return "the echo differs from what was sent";
  if (sent && got->size() != data.size())
    co_return "a short echo (" + std::to_string(got->size()) + " of " + std::to_string(data.size()) + ") ended by EOF";
  co_return "";
}

void proxy_world(sim::world& w) {
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
    auto back = stream_listener::bind(socket_address::loopback(0));
    auto front = stream_listener::bind(socket_address::loopback(0));
    if (!back || !front) return;  // descriptor exhaustion of the world
    std::string problem =
        sync_wait(ctx, [](stream_listener& back, stream_listener& front, std::uint64_t seed) -> task<std::string> {
          scope servers;
          servers.spawn(echo_backend(back));
          servers.spawn(proxy(front, *back.local_address()));
          std::mt19937_64 rng(seed);
          std::string d[3];
          for (auto& x : d) {
            x.resize(1 + rng() % 50000);
            for (char& c : x) c = static_cast<char>('a' + rng() % 26);
          }
          auto at = *front.local_address();
          auto [a, b, c] = co_await when_all(with_timeout(client(at, d[0]), 600s), with_timeout(client(at, d[1]), 600s),
                                             with_timeout(client(at, d[2]), 600s));
          front.cancel();
          back.cancel();
          co_await servers.join();
          std::string all;
          for (auto* r : {&a, &b, &c}) all += *r ? **r : std::string("a client hung; ");
          co_return all;
        }(*back, *front, w.seed()));
    if (!problem.empty()) throw std::runtime_error(problem);
  }
  if (w.open_sockets() != 0) throw std::runtime_error(std::to_string(w.open_sockets()) + " sockets left open");
}

}  // namespace

TEST(SimProxyExample, SlowLinksEchoEveryByte) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(1000);
  opts.faults.min_latency = std::chrono::microseconds(100);
  opts.faults.max_latency = std::chrono::milliseconds(30);
  opts.faults.buffer_bytes = 3000;
  opts.faults.short_transfer = 0.3;
  sim::seeds_summary s;
  {
    quiet_output quiet;
    s = sim::run_seeds(opts, proxy_world);
  }
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
}

TEST(SimProxyExample, HostileWorldsNeverCorruptHangOrLeak) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(1000);
  opts.faults = sim::hostile();
  opts.trace_lines = 400;
  sim::seeds_summary s;
  {
    quiet_output quiet;
    s = sim::run_seeds(opts, proxy_world);
  }
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
}
