// SPDX-License-Identifier: Apache-2.0
// Several hosts in one world: each with its own address and io_context on its own
// stack, taking turns in the seed's order. Addresses (a wildcard bind, the local
// address of a connection, loopback), a server stopped when its clients are done,
// cross-host channels and posts, partitions between hosts, virtual time, deadlocks,
// exceptions, and determinism: the same seed gives the same run, checked by the trace.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "ringio/sim/run_seeds.hpp"
#include "ringio/sim/world.hpp"
#include "ringio/time/now.hpp"
#include "sim/echo_exchange.hpp"
#include "support/sanitizer.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

socket_address ip(const char* text, std::uint16_t port = 0) { return *socket_address::from_host(text, port); }

// Echoes one connection until EOF or an error.
task<void> echo_connection(stream_socket s) {
  std::array<std::byte, 4096> buf;
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) co_return;
    if (!co_await s.send_all(std::span(buf).first(*n))) co_return;
  }
}

// A server host's program: listens on the wildcard address, echoes every connection,
// and records the peers it saw, until it is stopped.
task<void> echo_server(std::vector<std::string>& peers) {
  auto l = stream_listener::bind(socket_address::any(7));
  while (!l && l.error() == std::errc::too_many_files_open) {  // a descriptor fault: try again
    if (!co_await sleep_for(1ms)) co_return;
    l = stream_listener::bind(socket_address::any(7));
  }
  if (!l) throw std::runtime_error("bind: " + l.error().message());
  scope connections;
  for (;;) {
    auto s = co_await l->accept();
    if (!s) {
      if (s.error() == std::errc::operation_canceled) break;
      continue;  // an aborted connection, a descriptor fault
    }
    if (auto peer = s->peer_address()) peers.push_back(peer->to_string());
    connections.spawn(echo_connection(std::move(*s)));
  }
  co_await connections.join();
}

// A client host's program: echoes `data` through the server, keeps what came back.
task<void> echo_client(socket_address server, std::string data, result<std::string>& out, std::string& local) {
  auto s = co_await stream_socket::connect(server);
  if (!s) {
    out = unexpected(s.error());
    co_return;
  }
  if (auto me = s->local_address()) local = me->to_string();
  auto [sent, got] = co_await ringio_test::echo_exchange(*s, data);
  out = got && !sent ? result<std::string>(unexpected(make_error_code(std::errc::connection_reset))) : got;
}

struct three_hosts {
  std::vector<std::string> peers;
  result<std::string> a = unexpected(make_error_code(std::errc::interrupted));
  result<std::string> b = unexpected(make_error_code(std::errc::interrupted));
  std::string local_a, local_b;
};

void add_three_hosts(sim::world& w, three_hosts& r, std::size_t bytes) {
  w.add_host("server", ip("10.0.0.1"), [&r](io_context&) { return echo_server(r.peers); });
  w.add_client("a", ip("10.0.0.2"), [&r, bytes](io_context&) {
    return echo_client(ip("10.0.0.1", 7), std::string(bytes, 'a'), r.a, r.local_a);
  });
  w.add_client("b", ip("10.0.0.3"), [&r, bytes](io_context&) {
    return echo_client(ip("10.0.0.1", 7), std::string(bytes, 'b'), r.b, r.local_b);
  });
}

TEST(SimHosts, ClientsOnTwoHostsEchoThroughAServerHost) {
  sim::world w(11);
  three_hosts r;
  add_three_hosts(w, r, 100'000);
  w.run();
  ASSERT_TRUE(r.a) << r.a.error().message();
  ASSERT_TRUE(r.b) << r.b.error().message();
  EXPECT_EQ(*r.a, std::string(100'000, 'a'));
  EXPECT_EQ(*r.b, std::string(100'000, 'b'));
  // Each connection's local address is its host's; the server saw both hosts.
  EXPECT_EQ(r.local_a.rfind("10.0.0.2:", 0), 0u) << r.local_a;
  EXPECT_EQ(r.local_b.rfind("10.0.0.3:", 0), 0u) << r.local_b;
  std::set<std::string> hosts;
  for (const auto& p : r.peers) hosts.insert(p.substr(0, p.find(':')));
  EXPECT_EQ(hosts, (std::set<std::string>{"10.0.0.2", "10.0.0.3"}));
  EXPECT_EQ(w.open_sockets(), 0u) << "the stopped server closed its listener and connections";
  EXPECT_EQ(w.deadlocks(), 0u);
}

TEST(SimHosts, TheSameSeedGivesTheSameRunAndOthersDiffer) {
  auto run_once = [](std::uint64_t seed) {
    sim::world w(seed, sim::hostile());
    three_hosts r;
    add_three_hosts(w, r, 30'000);
    w.run();
    return w.trace_hash();
  };
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const std::uint64_t first = run_once(seed);
    EXPECT_EQ(first, run_once(seed)) << "seed " << seed << " ran two ways";
    hashes.insert(first);
  }
  EXPECT_GE(hashes.size(), 5u) << "seeds hardly change the run";
}

// A host's loopback is the host itself: a client on the server's host reaches it at
// 127.0.0.1, and nobody else's loopback does.
TEST(SimHosts, LoopbackIsTheHostItself) {
  sim::world w(5);
  std::vector<std::string> peers;
  result<std::string> same = unexpected(make_error_code(std::errc::interrupted));
  std::error_code other;
  std::string local;
  w.add_host("server", ip("10.0.0.1"), [&](io_context&) -> task<void> {
    scope s;
    s.spawn(echo_server(peers));
    (void)co_await sleep_for(1ms);  // the listener is bound
    co_await echo_client(ip("127.0.0.1", 7), "hello", same, local);
    s.request_stop();
    co_await s.join();
  });
  w.add_host("other", ip("10.0.0.2"), [&](io_context&) -> task<void> {
    (void)co_await sleep_for(1ms);
    auto c = co_await stream_socket::connect(ip("127.0.0.1", 7));
    other = c ? std::error_code() : c.error();
  });
  w.run();
  ASSERT_TRUE(same) << same.error().message();
  EXPECT_EQ(*same, "hello");
  EXPECT_EQ(local.rfind("10.0.0.1:", 0), 0u) << local;
  EXPECT_EQ(other, std::errc::connection_refused);
}

// A channel between the loops of two hosts, and a post back: values arrive in order
// and the run is the same for the same seed.
TEST(SimHosts, ChannelsAndPostsCrossHostsDeterministically) {
  auto run_once = [](std::uint64_t seed) {
    sim::world w(seed);
    channel<int> ch(4);
    std::vector<int> got;
    std::vector<std::int64_t> acks;  // virtual times the producer's loop ran the posts
    io_context* producer_ctx = nullptr;
    w.add_client("producer", ip("10.0.0.1"), [&](io_context& ctx) -> task<void> {
      producer_ctx = &ctx;
      for (int i = 0; i < 100; ++i) {
        if (i % 10 == 0) (void)co_await sleep_for(std::chrono::milliseconds(1 + i % 7));
        auto sent = co_await ch.send(i);
        if (!sent) throw std::runtime_error("send: " + sent.error().message());
      }
      ch.close();
      (void)co_await sleep_for(50ms);  // the consumer's last posts arrive
    });
    w.add_client("consumer", ip("10.0.0.2"), [&](io_context&) -> task<void> {
      for (;;) {
        auto v = co_await ch.receive();
        if (!v) break;
        got.push_back(*v);
        if (*v % 25 == 0 && producer_ctx != nullptr)
          post(*producer_ctx, [&acks, &w] { acks.push_back(w.elapsed().count()); });
      }
    });
    w.run();
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i) expected[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(got, expected);
    EXPECT_EQ(acks.size(), 4u);
    return std::pair(w.trace_hash(), acks);
  };
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed : {1u, 2u, 3u, 4u}) {
    auto first = run_once(seed);
    EXPECT_EQ(first, run_once(seed)) << "seed " << seed;
    hashes.insert(first.first);
  }
  EXPECT_GE(hashes.size(), 3u) << "the seed does not change the hosts' interleaving";
}

// A host posts to another and then waits for a far timer: the post runs at once, not
// when virtual time next moves (a turn in which the loop ran is not an idle turn).
TEST(SimHosts, APostRunsAtOnceThoughThePosterThenWaits) {
  sim::world w(6);
  io_context* receiver = nullptr;
  std::chrono::nanoseconds ran_at{-1};
  w.add_host("receiver", ip("10.0.0.2"), [&](io_context& ctx) -> task<void> {
    receiver = &ctx;
    (void)co_await sleep_for(1h);  // stopped when the client is done
  });
  w.add_client("poster", ip("10.0.0.1"), [&](io_context&) -> task<void> {
    while (receiver == nullptr) co_await yield();
    post(*receiver, [&] { ran_at = w.elapsed(); });
    (void)co_await sleep_for(10s);
  });
  w.run();
  EXPECT_GE(ran_at.count(), 0) << "the post never ran";
  EXPECT_LT(ran_at, 1ms) << "the post waited for virtual time to move";
}

// A partition between two hosts holds the third's traffic back not at all; the cut
// client times out in virtual time, and after heal() it gets through.
TEST(SimHosts, APartitionCutsOneHostOffUntilHealed) {
  sim::world w(9);
  std::vector<std::string> peers;
  std::error_code cut_error;
  result<std::string> after_heal = unexpected(make_error_code(std::errc::interrupted));
  result<std::string> unaffected = unexpected(make_error_code(std::errc::interrupted));
  std::string l1, l2;
  w.partition(ip("10.0.0.1"), ip("10.0.0.3"));
  w.add_host("server", ip("10.0.0.1"), [&](io_context&) { return echo_server(peers); });
  w.add_client("near", ip("10.0.0.2"),
               [&](io_context&) { return echo_client(ip("10.0.0.1", 7), "near", unaffected, l1); });
  w.add_client("far", ip("10.0.0.3"), [&](io_context&) -> task<void> {
    auto c = co_await with_timeout(stream_socket::connect(ip("10.0.0.1", 7)), 5s);
    cut_error = c ? std::error_code() : c.error();
    w.heal(ip("10.0.0.1"), ip("10.0.0.3"));
    co_await echo_client(ip("10.0.0.1", 7), "far", after_heal, l2);
  });
  auto real = std::chrono::steady_clock::now();
  w.run();
  EXPECT_LT(std::chrono::steady_clock::now() - real, 5s);
  EXPECT_EQ(cut_error, std::errc::timed_out);
  ASSERT_TRUE(unaffected) << unaffected.error().message();
  EXPECT_EQ(*unaffected, "near");
  ASSERT_TRUE(after_heal) << after_heal.error().message();
  EXPECT_EQ(*after_heal, "far");
  EXPECT_GE(w.elapsed(), 5s);
}

// Every host waits for a byte nobody will send, with no timer: the world declares a
// deadlock, the waiting operations fail, and the programs unwind.
TEST(SimHosts, HostsThatWaitForeverAreDeadlockedAndUnwound) {
  sim::world w(4);
  std::error_code client_error;
  w.add_host("mute", ip("10.0.0.1"), [](io_context&) -> task<void> {
    auto l = stream_listener::bind(socket_address::any(7));
    if (!l) co_return;
    auto s = co_await l->accept();
    if (!s) co_return;
    std::array<std::byte, 16> buf;
    (void)co_await s->recv(buf);  // the client never sends
  });
  w.add_client("waiting", ip("10.0.0.2"), [&](io_context&) -> task<void> {
    (void)co_await sleep_for(1ms);
    auto c = co_await stream_socket::connect(ip("10.0.0.1", 7));
    if (!c) co_return;
    std::array<std::byte, 16> buf;
    auto n = co_await c->recv(buf);  // the server never sends either
    client_error = n ? std::error_code() : n.error();
  });
  w.run();
  EXPECT_GE(w.deadlocks(), 1u);
  EXPECT_EQ(client_error, std::errc::operation_canceled);
  EXPECT_EQ(w.open_sockets(), 0u);
}

TEST(SimHosts, AnExceptionOfAHostComesOutOfRun) {
  sim::world w(2);
  w.add_client("thrower", ip("10.0.0.1"), [](io_context&) -> task<void> {
    (void)co_await sleep_for(10ms);
    throw std::runtime_error("host failed");
  });
  w.add_host("bystander", ip("10.0.0.2"), [](io_context&) -> task<void> {
    auto r = co_await sleep_for(1h);  // stopped once the client is done
    EXPECT_EQ(r.error(), std::errc::operation_canceled);
  });
  EXPECT_THROW(w.run(), std::runtime_error);
  EXPECT_LT(w.elapsed(), 1h);
}

TEST(SimHosts, HostsAreCheckedWhenAdded) {
  sim::world w(1);
  w.add_host("a", ip("10.0.0.1"), [](io_context&) -> task<void> { co_return; });
  EXPECT_THROW(w.add_host("a", ip("10.0.0.9"), [](io_context&) -> task<void> { co_return; }), std::invalid_argument);
  EXPECT_THROW(w.add_host("b", ip("10.0.0.1", 80), [](io_context&) -> task<void> { co_return; }),
               std::invalid_argument);
  w.run();
  EXPECT_THROW(w.run(), std::logic_error);
  EXPECT_THROW(w.add_host("c", ip("10.0.0.3"), [](io_context&) -> task<void> { co_return; }), std::logic_error);
}

// Seeded hostile worlds of three hosts: every echo exact or an error, nothing left.
TEST(SimHosts, HostileWorldsOfThreeHosts) {
  sim::seeds_options o;
  o.count = ringio_test::sim_worlds(2000);
  o.faults = sim::hostile();
  std::size_t complete = 0;
  auto summary = sim::run_seeds(o, [&complete](sim::world& w) {
    three_hosts r;
    add_three_hosts(w, r, 20'000);
    w.run();
    complete += (r.a ? 1 : 0) + (r.b ? 1 : 0);
    if (r.a && *r.a != std::string(20'000, 'a')) throw std::runtime_error("host a's echo differs");
    if (r.b && *r.b != std::string(20'000, 'b')) throw std::runtime_error("host b's echo differs");
    if (w.open_sockets() != 0) throw std::runtime_error("sockets left open");
  });
  EXPECT_FALSE(summary.failure) << *summary.failure;
  EXPECT_TRUE(summary.deterministic);
  EXPECT_GT(complete, summary.worlds / 2) << "hardly any echo got through: the worlds test little";
  std::printf("hostile three-host worlds: %zu in %.2f s real, %llu operations, %zu of %zu echoes complete\n",
              summary.worlds, std::chrono::duration<double>(summary.real_time).count(),
              static_cast<unsigned long long>(summary.operations), complete, 2 * summary.worlds);
}

}  // namespace
