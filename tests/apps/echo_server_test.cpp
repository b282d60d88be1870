// SPDX-License-Identifier: Apache-2.0
// The echo_server program, driven from outside: its CLI contract, its graceful stop,
// and 1 GiB echoed exactly over 100 connections.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include "ringio/ringio.hpp"
#include "support/child_process.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr const char* server = ECHO_SERVER_PATH;

// Starts echo_server on a kernel-chosen port and returns that port (0 on failure).
std::uint16_t start(child_process& p) {
  auto line = p.read_line(10s);
  if (!line) return 0;
  auto pos = line->find("127.0.0.1:");
  if (pos == std::string::npos) return 0;
  return static_cast<std::uint16_t>(std::stoi(line->substr(pos + 10)));
}

int run_to_exit(std::vector<std::string> argv, std::string* err = nullptr) {
  child_process p(std::move(argv));
  auto st = p.wait(10s);
  if (err) *err = p.stderr_text();
  return st.value_or(-1);
}

TEST(EchoServerCli, HelpExitsZero) { EXPECT_EQ(run_to_exit({server, "--help"}), 0); }

TEST(EchoServerCli, BadArgumentsPrintUsageAndExitTwo) {
  std::string err;
  EXPECT_EQ(run_to_exit({server}, &err), 2);
  EXPECT_NE(err.find("usage:"), std::string::npos);
  EXPECT_EQ(run_to_exit({server, "--port", "99999"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "abc"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--backend", "kqueue"}, &err), 2);
  EXPECT_NE(err.find("kqueue"), std::string::npos);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--threads", "0"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--host", "not-an-ip"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--frobnicate", "2"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "extra"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--direct-fds=yes"}, &err), 2);
  EXPECT_NE(err.find("usage:"), std::string::npos);
}

TEST(EchoServerCli, FiberOptionsThatMakeNoSenseExitTwo) {
  std::string err;
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--fibers", "--recv", "single"}, &err), 2);
  EXPECT_NE(err.find("--fibers"), std::string::npos) << err;
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--fiber-stack-kib", "32"}, &err), 2);
  EXPECT_NE(err.find("--fiber-stack-kib"), std::string::npos) << err;
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--fibers", "--fiber-stack-kib", "4"}), 2);
}

TEST(EchoServerCli, ReceiveBufferOptionsTakeOnOrOff) {
  std::string err;
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--recv-bundle", "maybe"}, &err), 2);
  EXPECT_NE(err.find("--recv-bundle"), std::string::npos) << err;
  EXPECT_NE(err.find("usage:"), std::string::npos) << err;
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--pbuf-inc", "1"}, &err), 2);
  EXPECT_NE(err.find("--pbuf-inc"), std::string::npos) << err;
}

TEST(EchoServerCli, PortInUseIsAClearErrorAndExitOne) {
  auto busy = listen_loopback({.reuse_port = false});
  auto port = std::to_string(address_of(busy).port());
  for (const char* threads : {"1", "2"}) {
    std::string err;
    EXPECT_EQ(run_to_exit({server, "--port", port, "--threads", threads}, &err), 1);
    EXPECT_NE(err.find("in use"), std::string::npos) << err;
  }
}

// Plain blocking client helpers (outside ringio, like any other peer).
int connect_to(std::uint16_t port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto at = socket_address::loopback(port);
  if (::connect(s, at.native(), at.size()) != 0) {
    ::close(s);
    return -1;
  }
  return s;
}

bool echo_once(int s, const std::string& msg) {
  if (::send(s, msg.data(), msg.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size())) return false;
  std::string back(msg.size(), '\0');
  std::size_t got = 0;
  while (got < back.size()) {
    ssize_t n = ::recv(s, back.data() + got, back.size() - got, 0);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return back == msg;
}

class EchoServerStop : public ::testing::TestWithParam<const char*> {};

// Small and large messages come back exactly with every receive-buffer option.
TEST_P(EchoServerStop, EchoesExactlyWithEveryReceiveBufferOption) {
  for (auto [bundle, inc] :
       {std::pair{"off", "off"}, std::pair{"on", "off"}, std::pair{"off", "on"}, std::pair{"on", "on"}}) {
    SCOPED_TRACE(std::string("bundle ") + bundle + " inc " + inc);
    child_process p({server, "--port", "0", "--backend", GetParam(), "--recv-bundle", bundle, "--pbuf-inc", inc});
    auto port = start(p);
    ASSERT_NE(port, 0) << p.stderr_text();
    int c = connect_to(port);
    ASSERT_GE(c, 0);
    for (int i = 0; i < 50; ++i) EXPECT_TRUE(echo_once(c, "message " + std::to_string(i)));
    std::string large(200000, '\0');
    for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>('a' + (i * 7) % 26);
    std::thread sender([c, &large] { (void)::send(c, large.data(), large.size(), MSG_NOSIGNAL); });
    std::string back(large.size(), '\0');
    std::size_t got = 0;
    while (got < back.size()) {
      ssize_t n = ::recv(c, back.data() + got, back.size() - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    sender.join();
    EXPECT_TRUE(back == large) << "the large message came back different (" << got << " bytes)";
    ::close(c);
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait(10s), std::optional<int>(0));
  }
}

TEST_P(EchoServerStop, SigtermLetsOpenConnectionsFinishThenExitsZero) {
  child_process p({server, "--port", "0", "--backend", GetParam(), "--drain-timeout", "10"});
  auto port = start(p);
  ASSERT_NE(port, 0) << p.stderr_text();
  int c = connect_to(port);
  ASSERT_GE(c, 0);
  ASSERT_TRUE(echo_once(c, "before"));
  p.signal(SIGTERM);
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(echo_once(c, "during drain")) << "an open connection was cut at SIGTERM";
  EXPECT_LT(connect_to(port), 0) << "new connections are still accepted after SIGTERM";
  EXPECT_FALSE(p.wait(100ms).has_value()) << "exited before the open connection finished";
  ::close(c);
  EXPECT_EQ(p.wait(10s), std::optional<int>(0)) << p.stderr_text();
}

TEST_P(EchoServerStop, DrainDeadlineCutsIdleConnections) {
  child_process p({server, "--port", "0", "--backend", GetParam(), "--drain-timeout", "0.2"});
  auto port = start(p);
  ASSERT_NE(port, 0);
  int c = connect_to(port);
  ASSERT_TRUE(echo_once(c, "x"));
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(5s), std::optional<int>(0));
  char b;
  EXPECT_EQ(::recv(c, &b, 1, 0), 0) << "the idle connection was not closed";
  ::close(c);
}

// --fibers: one fiber per connection; the same graceful stop.
TEST_P(EchoServerStop, FibersEchoAndDrainOnSigterm) {
  child_process p(
      {server, "--port", "0", "--backend", GetParam(), "--fibers", "--fiber-stack-kib", "32", "--drain-timeout", "10"});
  auto port = start(p);
  ASSERT_NE(port, 0) << p.stderr_text();
  int c = connect_to(port);
  ASSERT_GE(c, 0);
  ASSERT_TRUE(echo_once(c, "before"));
  ASSERT_TRUE(echo_once(c, std::string(100000, 'f')));
  p.signal(SIGTERM);
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(echo_once(c, "during drain"));
  ::close(c);
  EXPECT_EQ(p.wait(10s), std::optional<int>(0)) << p.stderr_text();
}

INSTANTIATE_TEST_SUITE_P(, EchoServerStop, ::testing::Values("uring", "epoll", "uring-poll"), [](const auto& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
});

class EchoServerDispatch : public ::testing::TestWithParam<const char*> {};

TEST_P(EchoServerDispatch, ConnectionsSpreadOverAllThreads) {
  child_process p({server, "--port", "0", "--threads", "2", "--dispatch", GetParam()});
  auto port = start(p);
  ASSERT_NE(port, 0) << p.stderr_text();
  std::vector<int> conns;
  for (int i = 0; i < 40; ++i) {
    int c = connect_to(port);
    ASSERT_GE(c, 0);
    ASSERT_TRUE(echo_once(c, "hello " + std::to_string(i)));
    conns.push_back(c);
  }
  for (int c : conns) ::close(c);
  p.signal(SIGTERM);
  ASSERT_EQ(p.wait(10s), std::optional<int>(0));
  auto err = p.stderr_text();
  auto pos = err.find("connections served per thread:");
  ASSERT_NE(pos, std::string::npos) << err;
  int a = -1, b = -1;
  ASSERT_EQ(std::sscanf(err.c_str() + pos, "connections served per thread: %d %d", &a, &b), 2) << err;
  EXPECT_EQ(a + b, 40);
  EXPECT_GT(a, 0) << err;
  EXPECT_GT(b, 0) << err;
}

INSTANTIATE_TEST_SUITE_P(, EchoServerDispatch, ::testing::Values("reuseport", "acceptor"));

// xorshift stream: sender and checker generate the same bytes without storing them.
struct byte_stream {
  std::uint64_t x;
  void fill(std::span<std::byte> out) {
    for (auto& b : out) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      b = static_cast<std::byte>(x);
    }
  }
};

task<bool> pump(socket_address at, std::uint64_t seed, std::size_t bytes) {
  auto s = co_await stream_socket::connect(at);
  if (!s) co_return false;
  auto sender = [](stream_socket& s, std::uint64_t seed, std::size_t bytes) -> task<bool> {
    byte_stream gen{seed};
    std::vector<std::byte> chunk(256 * 1024);
    for (std::size_t off = 0; off < bytes; off += chunk.size()) {
      auto part = std::span(chunk).first(std::min(chunk.size(), bytes - off));
      gen.fill(part);
      auto w = co_await s.send_all(part);
      if (!w) co_return false;
    }
    co_return true;
  };
  auto checker = [](stream_socket& s, std::uint64_t seed, std::size_t bytes) -> task<bool> {
    byte_stream gen{seed};
    std::vector<std::byte> got(256 * 1024), want(256 * 1024);
    for (std::size_t off = 0; off < bytes; off += got.size()) {
      auto part = std::span(got).first(std::min(got.size(), bytes - off));
      auto r = co_await s.recv_exact(part);
      if (!r || *r != part.size()) co_return false;
      auto expect = std::span(want).first(part.size());
      gen.fill(expect);
      if (!std::equal(part.begin(), part.end(), expect.begin())) co_return false;
    }
    co_return true;
  };
  auto [sent, checked] = co_await when_all(sender(*s, seed, bytes), checker(*s, seed, bytes));
  co_return sent&& checked;
}

void echo_exactly(std::vector<std::string> argv, std::size_t total) {
  child_process p(std::move(argv));
  auto port = start(p);
  ASSERT_NE(port, 0) << p.stderr_text();
  io_context ctx;
  auto good = sync_wait(ctx, [](std::uint16_t port, std::size_t total) -> task<int> {
    std::vector<task<bool>> conns;
    for (int i = 0; i < 100; ++i) {
      std::size_t share = total / 100 + (i == 0 ? total % 100 : 0);
      conns.push_back(pump(socket_address::loopback(port), 1000 + i, share));
    }
    auto results = co_await when_all(std::move(conns));
    int ok = 0;
    for (bool b : results) ok += b ? 1 : 0;
    co_return ok;
  }(port, total));
  EXPECT_EQ(good, 100);
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(10s), std::optional<int>(0));
}

TEST(EchoServerLoad, EchoesOneGibibyteExactlyOverHundredConnections) {
#if defined(RINGIO_SANITIZED)
  constexpr std::size_t total = std::size_t{64} << 20;  // sanitizers run ~10x slower
#else
  constexpr std::size_t total = std::size_t{1} << 30;
#endif
  echo_exactly({server, "--port", "0", "--threads", "2"}, total);
}

// --direct-fds: connections in the rings' file tables (io_uring; the default backend
// here), with the multishot receiver and with a recv per message.
TEST(EchoServerLoad, DirectDescriptorsEchoExactlyOverHundredConnections) {
  echo_exactly({server, "--port", "0", "--threads", "2", "--direct-fds"}, std::size_t{128} << 20);
  echo_exactly({server, "--port", "0", "--threads", "2", "--direct-fds", "--recv", "single"}, std::size_t{128} << 20);
}

TEST(EchoServerLoad, FibersEchoExactlyOverHundredConnections) {
  echo_exactly({server, "--port", "0", "--threads", "2", "--fibers"}, std::size_t{256} << 20);
}

// --metrics-port: GET /metrics on its own port shows the bytes echoed (the loop counts
// every socket read and write, so at least the client's bytes each way).
TEST(EchoServerMetrics, MetricsPortServesTheLoopsBytes) {
  child_process p({server, "--port", "0", "--metrics-port", "0"});
  auto port = start(p);
  ASSERT_NE(port, 0) << p.stderr_text();
  auto metrics_port = start(p);  // "echo_server: metrics on 127.0.0.1:P"
  ASSERT_NE(metrics_port, 0) << p.stderr_text();
  const std::string msg(1000, 'm');
  int s = connect_to(port);
  ASSERT_GE(s, 0);
  EXPECT_TRUE(echo_once(s, msg));
  ::close(s);

  int m = connect_to(metrics_port);
  ASSERT_GE(m, 0);
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(m, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  std::string page;
  char buf[4096];
  for (ssize_t n; (n = ::recv(m, buf, sizeof buf, 0)) > 0;) page.append(buf, static_cast<std::size_t>(n));
  ::close(m);
  ASSERT_EQ(page.rfind("HTTP/1.1 200", 0), 0u) << page;
  // The page's own request went through the same loop: received >= the echo's bytes.
  auto value = [&](const std::string& sample) -> double {
    auto at = page.find("\n" + sample + " ");
    return at == std::string::npos ? -1 : std::stod(page.substr(at + sample.size() + 2));
  };
  EXPECT_GE(value("ringio_loop_bytes_received_total{loop=\"0\"}"), 1000) << page;
  EXPECT_GE(value("ringio_loop_bytes_sent_total{loop=\"0\"}"), 1000) << page;
  EXPECT_GE(value("ringio_loop_iterations_total{loop=\"0\"}"), 1) << page;
  EXPECT_EQ(page.find("ringio_http_"), std::string::npos);  // no HTTP server of the app's to report
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(10s), std::optional<int>(0));
}

}  // namespace
