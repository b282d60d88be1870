// SPDX-License-Identifier: Apache-2.0
// Errors from real peers: refused connections, resets mid-transfer, running out of
// file descriptors while accepting.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

// A plain blocking client socket connected to `to` (outside ringio).
int raw_connect(const socket_address& to) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(s, 0);
  EXPECT_EQ(::connect(s, to.native(), to.size()), 0) << std::strerror(errno);
  return s;
}

// Closes with RST instead of FIN.
void reset_close(int fd) {
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

class ConnectionErrors : public backend_test {};

TEST_P(ConnectionErrors, ConnectToAClosedPortIsRefused) {
  socket_address closed;
  {
    auto l = listen_loopback();
    closed = address_of(l);
  }  // closed again: nobody listens on that port now
  auto r = run(
      [](socket_address to) -> task<result<stream_socket>> { co_return co_await stream_socket::connect(to); }(closed));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::connection_refused);
}

TEST_P(ConnectionErrors, PeerResetWhileReceivingReportsConnectionReset) {
  auto l = listen_loopback();
  int client = raw_connect(address_of(l));
  ASSERT_EQ(::send(client, "partial", 7, 0), 7);
  auto err = run([](stream_listener& l, int client) -> task<std::error_code> {
    auto s = co_await l.accept();
    EXPECT_TRUE(s);
    std::array<char, 64> buf;
    auto first = co_await s->recv(buf);
    EXPECT_EQ(first.value_or(0), 7u);
    reset_close(client);
    auto second = co_await s->recv(buf);
    co_return second.error();
  }(l, client));
  EXPECT_EQ(err, std::errc::connection_reset);
}

// recv_exact that received some bytes before the reset returns that short count; the
// kernel reports a reset once, so the next receive on the socket must still say
// connection_reset (not 0, which would read as a clean end of stream).
TEST_P(ConnectionErrors, AResetBehindAShortRecvExactIsReportedByTheNextReceive) {
  auto l = listen_loopback();
  int client = raw_connect(address_of(l));
  ASSERT_EQ(::send(client, "partial", 7, 0), 7);
  reset_close(client);  // data, then RST: both wait in the server's socket
  auto r = run([](stream_listener& l) -> task<std::pair<std::size_t, std::error_code>> {
    auto s = co_await l.accept();
    EXPECT_TRUE(s);
    std::array<char, 64> buf;
    auto got = co_await s->recv_exact(buf);
    EXPECT_EQ(got.value_or(0), 7u) << "the bytes before the reset";
    auto next = co_await s->recv(buf);
    std::error_code ec = next ? std::error_code{} : next.error();
    auto after = co_await s->recv(buf);  // reported once, like the kernel's own error
    EXPECT_TRUE(after && *after == 0);
    co_return std::pair{got.value_or(0), ec};
  }(l));
  EXPECT_EQ(r.second, std::errc::connection_reset);

  // The same through a second recv_exact.
  client = raw_connect(address_of(l));
  ASSERT_EQ(::send(client, "abc", 3, 0), 3);
  reset_close(client);
  auto err = run([](stream_listener& l) -> task<std::error_code> {
    auto s = co_await l.accept();
    EXPECT_TRUE(s);
    std::array<char, 16> buf;
    auto got = co_await s->recv_exact(buf);
    EXPECT_EQ(got.value_or(0), 3u);
    auto again = co_await s->recv_exact(buf);
    co_return again ? std::error_code{} : again.error();
  }(l));
  EXPECT_EQ(err, std::errc::connection_reset);
}

TEST_P(ConnectionErrors, PeerResetWhileSendingFailsTheSendWithoutASignal) {
  auto l = listen_loopback();
  int client = raw_connect(address_of(l));
  auto err = run([](stream_listener& l, int client) -> task<std::error_code> {
    auto s = co_await l.accept();
    EXPECT_TRUE(s);
    reset_close(client);
    std::vector<std::byte> big(8 << 20);
    // The first send may still be accepted by the kernel; keep sending until the
    // reset surfaces (EPIPE or ECONNRESET), which must not raise SIGPIPE.
    for (int i = 0; i < 100; ++i) {
      auto r = co_await s->send_all(big);
      if (!r) co_return r.error();
    }
    co_return std::error_code{};
  }(l, client));
  EXPECT_TRUE(err == std::errc::broken_pipe || err == std::errc::connection_reset) << err.message();
}

TEST_P(ConnectionErrors, AcceptRecoversAfterRunningOutOfDescriptors) {
  auto l = listen_loopback();
  auto at = address_of(l);
  // Five connections wait in the listen backlog.
  std::vector<int> clients;
  for (int i = 0; i < 5; ++i) clients.push_back(raw_connect(at));
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Room for exactly two more descriptors: the limit caps fd numbers, and new fds
  // take the lowest free numbers, so stop just above the second free one.
  rlimit tight = saved;
  int free_seen = 0, fd = 0;
  for (; free_seen < 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0) ++free_seen;
  tight.rlim_cur = static_cast<rlim_t>(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  struct outcome {
    int accepted_before = 0;
    std::error_code exhausted;
    int accepted_after = 0;
  };
  auto o = run([](stream_listener& l, rlimit saved) -> task<outcome> {
    outcome o;
    std::vector<stream_socket> held;
    for (;;) {
      auto s = co_await l.accept();
      if (!s) {
        o.exhausted = s.error();
        break;
      }
      held.push_back(std::move(*s));
      ++o.accepted_before;
      if (o.accepted_before > 10) break;
    }
    // Free descriptors (close one, raise the limit): the listener works again and the
    // connections that waited in the backlog are served.
    held.pop_back();
    setrlimit(RLIMIT_NOFILE, &saved);
    for (int i = 0; i < 3; ++i) {
      auto s = co_await with_timeout(l.accept(), std::chrono::seconds(5));
      if (!s) break;
      held.push_back(std::move(*s));
      ++o.accepted_after;
    }
    co_return o;
  }(l, saved));
  setrlimit(RLIMIT_NOFILE, &saved);
  for (int c : clients) ::close(c);
  EXPECT_EQ(o.exhausted, std::errc::too_many_files_open);
  EXPECT_EQ(o.accepted_before, 2);
  EXPECT_EQ(o.accepted_after, 3) << "the backlog was not served after descriptors were freed";
}

TEST_P(ConnectionErrors, AcceptedSocketsHaveNoDelay) {
  auto l = listen_loopback();
  int client = raw_connect(address_of(l));
  int nodelay = run([](stream_listener& l) -> task<int> {
    auto s = co_await l.accept();
    int v = 0;
    socklen_t len = sizeof v;
    ::getsockopt(s->native_handle(), IPPROTO_TCP, TCP_NODELAY, &v, &len);
    co_return v;
  }(l));
  ::close(client);
  EXPECT_NE(nodelay, 0);
}

TEST_P(ConnectionErrors, ConnectedSocketsHaveNoDelay) {
  auto l = listen_loopback();
  int nodelay = run([](socket_address at) -> task<int> {
    auto s = co_await stream_socket::connect(at);
    EXPECT_TRUE(s);
    int v = 0;
    socklen_t len = sizeof v;
    ::getsockopt(s->native_handle(), IPPROTO_TCP, TCP_NODELAY, &v, &len);
    co_return v;
  }(address_of(l)));
  EXPECT_NE(nodelay, 0);
}

TEST_P(ConnectionErrors, BindingABusyPortReportsAddressInUse) {
  auto l = listen_loopback({.reuse_port = false});
  auto again = stream_listener::bind(address_of(l), {.reuse_port = false});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(), std::errc::address_in_use);
}

TEST_P(ConnectionErrors, ConnectFromAChosenSourceAddress) {
  auto l = listen_loopback();
  auto from = socket_address::parse("127.0.0.2:0");
  ASSERT_TRUE(from);
  auto peers =
      run([](stream_listener& l, socket_address to, socket_address from) -> task<std::pair<std::string, std::string>> {
        auto s = co_await stream_socket::connect(to, from);
        EXPECT_TRUE(s) << s.error().message();
        auto a = co_await l.accept();
        EXPECT_TRUE(a);
        if (!s || !a) co_return std::pair<std::string, std::string>{};
        auto mine = s->local_address();
        auto seen = a->peer_address();
        EXPECT_TRUE(mine && seen);
        EXPECT_NE(mine->port(), 0);
        co_return std::pair{mine->to_string(), seen->to_string()};
      }(l, address_of(l), *from));
  EXPECT_EQ(peers.first.substr(0, 10), "127.0.0.2:");
  EXPECT_EQ(peers.first, peers.second);
}

TEST_P(ConnectionErrors, ConnectFromAnAddressNotOnThisHostFailsAndLeaksNothing) {
  auto l = listen_loopback();
  auto from = socket_address::parse("192.0.2.1:0");  // TEST-NET-1: never a local address
  ASSERT_TRUE(from);
  const auto before = open_fd_count();
  auto r = run([](socket_address to, socket_address from) -> task<result<stream_socket>> {
    co_return co_await stream_socket::connect(to, from);
  }(address_of(l), *from));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::address_not_available);
  EXPECT_EQ(open_fd_count(), before);
}

TEST_P(ConnectionErrors, PollFirstReceiveGetsDataSentBeforeAndAfterItStarts) {
  auto l = listen_loopback();
  int client = raw_connect(address_of(l));
  ASSERT_EQ(::send(client, "early", 5, 0), 5);  // already queued when the receive starts
  auto got = run([](stream_listener& l, int client) -> task<std::string> {
    auto s = co_await l.accept();
    EXPECT_TRUE(s);
    std::array<char, 16> buf{};
    auto a = co_await s->recv(mutable_buffer(buf.data(), buf.size())).poll_first();
    EXPECT_TRUE(a);
    std::string out(buf.data(), a ? *a : 0);
    // Nothing queued now: the second arrives while the receive waits.
    std::thread late([client] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_EQ(::send(client, "late", 4, 0), 4);
    });
    auto b = co_await s->recv(mutable_buffer(buf.data(), buf.size())).poll_first();
    late.join();
    EXPECT_TRUE(b);
    out.append(buf.data(), b ? *b : 0);
    co_return out;
  }(l, client));
  ::close(client);
  EXPECT_EQ(got, "earlylate");
}

RINGIO_ALL_BACKENDS(ConnectionErrors);

}  // namespace
