// SPDX-License-Identifier: Apache-2.0
// Echo over real sockets: sizes from 1 byte to 1 MiB, many connections at once,
// every byte compared.
#include "support/echo.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/tcp_memory.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

task<void> echo_server(stream_listener& l, std::size_t connections) {
  scope conns;
  for (std::size_t i = 0; i < connections; ++i) {
    auto s = co_await l.accept();
    if (!s) {
      ADD_FAILURE() << "accept: " << s.error().message();
      break;
    }
    conns.spawn(echo_until_eof(std::move(*s)));
  }
  co_await conns.join();
}

// Sends `data` and reads the echo concurrently; true if every byte came back.
task<bool> echo_client(socket_address to, std::vector<std::byte> data) {
  auto s = co_await stream_socket::connect(to);
  if (!s) {
    ADD_FAILURE() << "connect: " << s.error().message();
    co_return false;
  }
  std::vector<std::byte> back(data.size());
  auto sender = [](stream_socket& s, std::span<const std::byte> d) -> task<bool> {
    auto r = co_await s.send_all(d);
    auto sh = co_await s.shutdown();
    co_return r&&* r == d.size() && sh;
  };
  auto [sent, got] = co_await when_all(sender(*s, data), s->recv_exact(back));
  const bool ok = sent && got && *got == data.size() && back == data;
  if (!ok) {
    // Which step failed, for the report (printed only when the test fails).
    std::fprintf(stderr, "echo of %zu bytes: send %s, echo %s\n", data.size(), sent ? "ok" : "failed",
                 !got                  ? got.error().message().c_str()
                 : *got != data.size() ? "short"
                 : back != data        ? "differs"
                                       : "ok");
  }
  co_return ok;
}

class Echo : public backend_test {};

TEST_P(Echo, RandomSizesFromOneByteToOneMebibyteOverAThousandConnections) {
  constexpr std::size_t connections = 1000;
  auto listener = listen_loopback();
  auto at = address_of(listener);
  std::mt19937_64 rng(7);
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  for (std::size_t i = 0; i < connections; ++i) {
    // log-uniform in [1, 2^20], plus the two edges
    std::size_t n = i == 0   ? 1
                    : i == 1 ? (1u << 20)
                             : static_cast<std::size_t>(std::exp2(std::uniform_real_distribution<double>(0, 20)(rng)));
    sizes.push_back(n);
    total += n;
  }
  const std::uint64_t aborts_before = tcp_aborts_on_memory();
  std::size_t ok = run([](stream_listener& l, socket_address at, std::vector<std::size_t> sizes) -> task<std::size_t> {
    std::vector<task<bool>> clients;
    for (std::size_t i = 0; i < sizes.size(); ++i) clients.push_back(echo_client(at, random_bytes(sizes[i], i)));
    auto [done, results] = co_await when_all(echo_server(l, sizes.size()), when_all(std::move(clients)));
    (void)done;
    std::size_t good = 0;
    for (bool b : results) good += b ? 1 : 0;
    co_return good;
  }(listener, at, sizes));
  const std::uint64_t aborts = tcp_aborts_on_memory() - aborts_before;
  if (ok != connections && aborts > 0)
    GTEST_SKIP() << "environment: the host ran out of TCP memory during the test (TCPAbortOnMemory +" << aborts
                 << "; the kernel reset connections with queued bytes); " << connections - ok << " echoes failed";
  EXPECT_EQ(ok, connections) << "total bytes " << total;
}

TEST_P(Echo, UnixDomainStream) {
  std::string path = "@ringio-echo-" + std::to_string(::getpid()) + "-" + std::string(to_string(GetParam()));
  auto at = socket_address::unix_path(path);
  ASSERT_TRUE(at);
  auto l = stream_listener::bind(*at);
  ASSERT_TRUE(l) << l.error().message();
  bool ok = run([](stream_listener& l, socket_address at) -> task<bool> {
    auto [done, good] = co_await when_all(echo_server(l, 1), echo_client(at, random_bytes(300000, 3)));
    (void)done;
    co_return good;
  }(*l, *at));
  EXPECT_TRUE(ok);
}

TEST_P(Echo, SendAllLoopsOverShortSends) {
  // A small send buffer and a peer that reads slowly force many short sends.
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int small = 4096;
  ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  stream_socket a{detail::fd_handle(sv[0])}, b{detail::fd_handle(sv[1])};
  auto data = random_bytes(4 << 20, 11);
  auto got =
      run([](stream_socket& a, stream_socket& b, const std::vector<std::byte>& data) -> task<std::vector<std::byte>> {
        std::vector<std::byte> back(data.size());
        auto reader = [](stream_socket& b, std::vector<std::byte>& back) -> task<std::size_t> {
          std::size_t off = 0;
          while (off < back.size()) {
            auto n = co_await b.recv(std::span(back).subspan(off, std::min<std::size_t>(1000, back.size() - off)));
            if (!n || *n == 0) break;
            off += *n;
          }
          co_return off;
        };
        auto [sent, read] = co_await when_all(a.send_all(data), reader(b, back));
        EXPECT_TRUE(sent);
        EXPECT_EQ(sent.value_or(0), data.size());
        EXPECT_EQ(read, data.size());
        co_return back;
      }(a, b, data));
  EXPECT_TRUE(got == data);
}

TEST_P(Echo, RecvExactIsShortOnlyAtEndOfStream) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  stream_socket a{detail::fd_handle(sv[0])}, b{detail::fd_handle(sv[1])};
  auto n = run([](stream_socket& a, stream_socket& b) -> task<std::size_t> {
    std::array<char, 100> buf;
    auto writer = [](stream_socket& a) -> task<void> {
      auto w1 = co_await a.send_all(std::string_view("hello "));
      co_await yield();
      auto w2 = co_await a.send_all(std::string_view("world"));
      EXPECT_TRUE(w1 && w2);
      auto c = co_await a.close();
      EXPECT_TRUE(c);
    };
    auto [w, r] = co_await when_all(writer(a), b.recv_exact(buf));
    (void)w;
    EXPECT_TRUE(r);
    EXPECT_EQ(std::string_view(buf.data(), r.value_or(0)), "hello world");
    co_return r.value_or(0);
  }(a, b));
  EXPECT_EQ(n, 11u);
}

RINGIO_ALL_BACKENDS_AND_SIM(Echo);

}  // namespace

namespace {

class Shutdown : public backend_test {};

// shutdown(2) never waits: here the peer is silent and the socket was just found empty.
TEST_P(Shutdown, CompletesAtOnceOnASilentSocket) {
  socket_pair p;
  auto r = run([](socket_pair& p) -> task<std::pair<bool, std::size_t>> {
    std::array<char, 16> buf;
    // The receive waits first (the backend starts watching the socket), then a short
    // read leaves the socket known to be empty.
    auto late_send = [](stream_socket& s) -> task<result<std::size_t>> {
      co_await yield();
      co_return co_await s.send_all(std::string_view("x"));
    };
    auto [got, first] = co_await when_all(p.a.recv(buf), late_send(p.b));
    EXPECT_TRUE(first && got);
    auto sh = co_await with_timeout(p.a.shutdown(SHUT_WR), std::chrono::seconds(2));
    auto eof = co_await with_timeout(p.b.recv(buf), std::chrono::seconds(2));
    co_return std::pair{static_cast<bool>(sh), eof.value_or(99)};
  }(p));
  EXPECT_TRUE(r.first) << "shutdown did not complete";
  EXPECT_EQ(r.second, 0u) << "the peer did not see the end of stream";
}

RINGIO_ALL_BACKENDS_AND_SIM(Shutdown);

}  // namespace
