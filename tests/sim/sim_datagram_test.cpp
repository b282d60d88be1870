// SPDX-License-Identifier: Apache-2.0
// Simulated UDP: datagrams whole or not at all, lost, duplicated and reordered as the
// fault model draws, the same for the same seed; dropped on a cut link between hosts;
// a full receive buffer drops; UDP and TCP ports are apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "ringio/sim/world.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

socket_address ip(const char* text, std::uint16_t port = 0) { return *socket_address::from_host(text, port); }

// Sends `count` numbered datagrams to `to`, one every 100 µs.
task<void> send_numbers(udp_socket& s, socket_address to, int count) {
  for (int i = 0; i < count; ++i) {
    std::string m = std::to_string(i);
    auto sent = co_await s.send_to(std::string_view(m), to);
    EXPECT_EQ(sent.value_or(0), m.size());
    (void)co_await sleep_for(100us);
  }
}

// Receives numbers until `quiet` passes without one.
task<std::vector<int>> receive_numbers(udp_socket& s, std::chrono::milliseconds quiet) {
  std::vector<int> got;
  for (;;) {
    std::array<char, 32> buf;
    auto d = co_await with_timeout(s.recv_from(buf), quiet);
    if (!d) co_return got;
    got.push_back(std::stoi(std::string(buf.data(), d->size)));
  }
}

struct udp_run {
  std::vector<int> got;
  std::uint64_t hash = 0;
};

udp_run run_udp(std::uint64_t seed, sim::fault_model faults, int count) {
  sim::world w(seed, faults);
  udp_run r;
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
    auto server = udp_socket::bind(socket_address::loopback(0));
    auto client = udp_socket::bind(socket_address::loopback(0));
    EXPECT_TRUE(server && client);
    if (!server || !client) return r;
    auto to = *server->local_address();
    r.got = sync_wait(ctx, [](udp_socket& s, udp_socket& c, socket_address to, int count) -> task<std::vector<int>> {
      auto [sent, got] = co_await when_all(send_numbers(c, to, count), receive_numbers(s, 50ms));
      co_return got;
    }(*server, *client, to, count));
  }
  EXPECT_EQ(w.open_sockets(), 0u);
  r.hash = w.trace_hash();
  return r;
}

TEST(SimDatagrams, ACalmNetworkDeliversEveryDatagramInOrder) {
  auto r = run_udp(1, sim::calm(), 200);
  std::vector<int> expected(200);
  for (int i = 0; i < 200; ++i) expected[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(r.got, expected);
}

TEST(SimDatagrams, LossDuplicationAndReorderingComeFromTheSeed) {
  sim::fault_model f;
  f.min_latency = 10us;
  f.max_latency = 2ms;  // a spread much wider than the sending pace: datagrams overtake
  f.datagram_loss = 0.1;
  f.datagram_duplicate = 0.1;
  auto r = run_udp(3, f, 500);
  std::set<int> distinct(r.got.begin(), r.got.end());
  const std::size_t duplicates = r.got.size() - distinct.size();
  const bool reordered = !std::is_sorted(r.got.begin(), r.got.end());
  EXPECT_LT(distinct.size(), 500u) << "nothing was lost";
  EXPECT_GT(distinct.size(), 350u) << "far more lost than the model says";
  EXPECT_GT(duplicates, 10u);
  EXPECT_TRUE(reordered);
  for (int v : distinct) EXPECT_TRUE(v >= 0 && v < 500) << v;
  auto again = run_udp(3, f, 500);
  EXPECT_EQ(again.got, r.got) << "the same seed delivered differently";
  EXPECT_EQ(again.hash, r.hash);
  EXPECT_NE(run_udp(4, f, 500).got, r.got);
}

TEST(SimDatagrams, AFullReceiveBufferDrops) {
  sim::world w(2, sim::calm());
  io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
  auto server = udp_socket::bind(socket_address::loopback(0));
  auto client = udp_socket::bind(socket_address::loopback(0));
  ASSERT_TRUE(server && client);
  auto to = *server->local_address();
  auto got = sync_wait(ctx, [](udp_socket& s, udp_socket& c, socket_address to) -> task<std::size_t> {
    const std::string big(8000, 'x');  // 64 KiB of receive buffer holds 8 of them
    for (int i = 0; i < 20; ++i) (void)co_await c.send_to(std::string_view(big), to);
    (void)co_await sleep_for(10ms);  // all arrived (or were dropped) before anyone reads
    std::size_t n = 0;
    for (;;) {
      std::array<char, 9000> buf;
      auto d = co_await with_timeout(s.recv_from(buf), 10ms);
      if (!d) co_return n;
      EXPECT_EQ(d->size, big.size());
      ++n;
    }
  }(*server, *client, to));
  EXPECT_EQ(got, 8u);
}

TEST(SimDatagrams, UdpAndTcpShareAPortNumber) {
  sim::world w(5);
  io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
  auto tcp = stream_listener::bind(socket_address::loopback(0));
  ASSERT_TRUE(tcp);
  auto port = tcp->local_address()->port();
  auto udp = udp_socket::bind(socket_address::loopback(port));
  EXPECT_TRUE(udp) << udp.error().message();
  auto second = udp_socket::bind(socket_address::loopback(port));
  EXPECT_EQ(second.error(), std::errc::address_in_use);
}

// Between hosts: a datagram crosses to the other host's address; across a cut link
// it is lost (UDP does not retransmit), and after heal() it crosses again.
TEST(SimDatagrams, ACutLinkBetweenHostsLosesDatagrams) {
  sim::world w(8, sim::calm());
  std::vector<int> got;
  socket_address sender_seen;
  w.add_host("receiver", ip("10.0.0.1"), [&](io_context&) -> task<void> {
    auto s = udp_socket::bind(socket_address::any(53));
    if (!s) co_return;
    for (;;) {
      std::array<char, 32> buf;
      auto d = co_await s->recv_from(buf);
      if (!d) co_return;  // stopped
      sender_seen = d->from;
      got.push_back(std::stoi(std::string(buf.data(), d->size)));
    }
  });
  w.add_client("sender", ip("10.0.0.2"), [&](io_context&) -> task<void> {
    auto s = udp_socket::open(ip("10.0.0.1"));
    if (!s) co_return;
    (void)co_await sleep_for(1ms);
    for (int i = 0; i < 30; ++i) {
      if (i == 10) w.partition(ip("10.0.0.1"), ip("10.0.0.2"));
      if (i == 20) w.heal_all();
      (void)co_await s->send_to(std::string_view(std::to_string(i)), ip("10.0.0.1", 53));
      (void)co_await sleep_for(1ms);
    }
    (void)co_await sleep_for(10ms);
  });
  w.run();
  std::vector<int> expected;
  for (int i = 0; i < 30; ++i)
    if (i < 10 || i >= 20) expected.push_back(i);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(sender_seen.to_string().rfind("10.0.0.2:", 0), 0u) << sender_seen.to_string();
}

}  // namespace
