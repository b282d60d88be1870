// SPDX-License-Identifier: Apache-2.0
// UDP datagrams, regular files at offsets, and signals delivered through the loop.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class Datagrams : public backend_test {};

TEST_P(Datagrams, SendToAndRecvFromCarryTheSender) {
  auto server = udp_socket::bind(socket_address::loopback(0));
  auto client = udp_socket::bind(socket_address::loopback(0));
  ASSERT_TRUE(server && client);
  auto server_at = *server->local_address();
  auto client_at = *client->local_address();
  auto d = run([](udp_socket& s, udp_socket& c, socket_address to) -> task<std::pair<std::string, datagram>> {
    std::array<char, 64> buf;
    auto [sent, got] = co_await when_all(c.send_to(std::string_view("hello udp"), to), s.recv_from(buf));
    EXPECT_EQ(sent.value_or(0), 9u);
    EXPECT_TRUE(got) << got.error().message();
    co_return std::pair{std::string(buf.data(), got->size), *got};
  }(*server, *client, server_at));
  EXPECT_EQ(d.first, "hello udp");
  EXPECT_EQ(d.second.from, client_at);
  EXPECT_FALSE(d.second.truncated);
}

TEST_P(Datagrams, OversizedDatagramIsTruncatedAndSaysSo) {
  auto server = udp_socket::bind(socket_address::loopback(0));
  auto client = udp_socket::open(socket_address::loopback(0));
  ASSERT_TRUE(server && client);
  auto to = *server->local_address();
  auto got = run([](udp_socket& s, udp_socket& c, socket_address to) -> task<result<datagram>> {
    std::array<char, 4> small;
    auto sent = co_await c.send_to(std::string_view("0123456789"), to);
    EXPECT_TRUE(sent);
    co_return co_await s.recv_from(small);
  }(*server, *client, to));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size, 4u);
  EXPECT_TRUE(got->truncated);
}

TEST_P(Datagrams, ConnectedSocketsUseSendAndRecv) {
  auto a = udp_socket::bind(socket_address::loopback(0));
  auto b = udp_socket::bind(socket_address::loopback(0));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->connect(*b->local_address()));
  ASSERT_TRUE(b->connect(*a->local_address()));
  auto n = run([](udp_socket& a, udp_socket& b) -> task<std::size_t> {
    std::array<char, 16> buf;
    auto [s, r] = co_await when_all(a.send(std::string_view("xyz")), b.recv(buf));
    EXPECT_TRUE(s);
    co_return r.value_or(0);
  }(*a, *b));
  EXPECT_EQ(n, 3u);
}

// A connected socket whose peer has no socket: the port-unreachable answer makes its
// next receive fail with connection_refused (as Linux reports the ICMP error).
TEST_P(Datagrams, ConnectedToAPortNobodyHoldsHearsRefused) {
  auto gone = udp_socket::bind(socket_address::loopback(0));
  ASSERT_TRUE(gone);
  auto nobody = *gone->local_address();
  gone->close();
  auto a = udp_socket::bind(socket_address::loopback(0));
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->connect(nobody));
  auto err = run([](udp_socket& a) -> task<std::error_code> {
    auto sent = co_await a.send(std::string_view("anyone?"));
    EXPECT_TRUE(sent) << sent.error().message();
    std::array<char, 16> buf;
    auto r = co_await with_timeout(a.recv(buf), 5s);
    co_return r ? std::error_code() : r.error();
  }(*a));
  EXPECT_EQ(err, std::errc::connection_refused);
}

// Many datagrams between two sockets: each whole, from the right sender.
TEST_P(Datagrams, AHundredDatagramsArriveWhole) {
  auto server = udp_socket::bind(socket_address::loopback(0));
  auto client = udp_socket::bind(socket_address::loopback(0));
  ASSERT_TRUE(server && client);
  auto to = *server->local_address();
  auto from = *client->local_address();
  auto got = run([](udp_socket& s, udp_socket& c, socket_address to, socket_address from) -> task<std::vector<int>> {
    std::vector<int> seen;
    for (int i = 0; i < 100; ++i) {
      std::string m = "datagram " + std::to_string(i);
      auto sent = co_await c.send_to(std::string_view(m), to);
      EXPECT_EQ(sent.value_or(0), m.size());
      std::array<char, 64> buf;
      auto d = co_await with_timeout(s.recv_from(buf), 5s);
      if (!d) break;
      EXPECT_EQ(d->from, from);
      EXPECT_FALSE(d->truncated);
      seen.push_back(std::stoi(std::string(buf.data() + 9, d->size - 9)));
    }
    co_return seen;
  }(*server, *client, to, from));
  ASSERT_EQ(got.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], i);
}

RINGIO_ALL_BACKENDS_AND_SIM(Datagrams);

class Files : public backend_test {};

TEST_P(Files, WriteAtThenReadAtRoundTrip) {
  std::string path =
      ::testing::TempDir() + "ringio-file-" + std::to_string(::getpid()) + "-" + std::string(to_string(GetParam()));
  auto data = random_bytes(200000, 5);
  auto back = run([](std::string path, const std::vector<std::byte>& data) -> task<std::vector<std::byte>> {
    auto f = file::open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_TRUE(f) << f.error().message();
    std::size_t off = 0;
    while (off < data.size()) {  // a write may be short
      auto w = co_await f->write_at(std::span(data).subspan(off), 1000 + off);
      EXPECT_TRUE(w);
      if (!w || *w == 0) break;
      off += *w;
    }
    EXPECT_EQ(f->size().value_or(0), 1000 + data.size());
    std::vector<std::byte> back(data.size());
    off = 0;
    while (off < back.size()) {
      auto r = co_await f->read_at(std::span(back).subspan(off), 1000 + off);
      EXPECT_TRUE(r);
      if (!r || *r == 0) break;
      off += *r;
    }
    auto eof = co_await f->read_at(std::span(back).first(10), 1000 + data.size());
    EXPECT_EQ(eof.value_or(99), 0u);
    auto c = co_await f->close();
    EXPECT_TRUE(c);
    co_return back;
  }(path, data));
  ::unlink(path.c_str());
  EXPECT_TRUE(back == data);
}

TEST_P(Files, OpeningAMissingFileIsAnError) {
  auto f = file::open("/nonexistent/ringio/file");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error(), std::errc::no_such_file_or_directory);
}

RINGIO_ALL_BACKENDS(Files);

class Signals : public backend_test {};

TEST_P(Signals, ASignalSentToTheProcessIsReceivedThroughTheLoop) {
  signal_set set({SIGUSR1, SIGUSR2});
  auto signo = run([](signal_set& set) -> task<int> {
    auto sender = []() -> task<void> {
      auto s = co_await sleep_for(10ms);
      EXPECT_TRUE(s);
      ::kill(::getpid(), SIGUSR2);
    };
    auto [unused, got] = co_await when_all(sender(), set.wait());
    (void)unused;
    co_return got.value_or(-1);
  }(set));
  EXPECT_EQ(signo, SIGUSR2);
}

RINGIO_ALL_BACKENDS(Signals);

}  // namespace
