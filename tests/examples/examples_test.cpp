// SPDX-License-Identifier: Apache-2.0
// The example programs, run as their users would run them: real clients (plain
// sockets, curl) against the built binaries, then SIGTERM for a graceful exit.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/tcp_memory.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// Reads "...listening on 127.0.0.1:PORT" from the program's first line.
std::uint16_t listening_port(child_process& p) {
  auto line = p.read_line(10s);
  if (!line) return 0;
  auto at = line->rfind(':');
  return at == std::string::npos ? 0 : static_cast<std::uint16_t>(std::stoi(line->substr(at + 1)));
}

// A blocking client socket with a 5 s receive timeout; `receive_buffer` > 0 makes it a
// slow reader's (set before connecting, with small segments so that loopback's 64 KiB
// ones do not stall in the tiny window).
class client {
 public:
  explicit client(std::uint16_t port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (receive_buffer > 0) {
      int mss = 1400;
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
      ::setsockopt(fd_, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~client() { ::close(fd_); }
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  [[nodiscard]] bool connected() const { return connected_; }
  [[nodiscard]] int fd() const { return fd_; }
  void receive_timeout(std::chrono::seconds t) {
    timeval tv{static_cast<time_t>(t.count()), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  bool send(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // The next line (without "\n"); empty on EOF, error or timeout.
  std::string line() {
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      char b[4096];
      ssize_t n = ::recv(fd_, b, sizeof b, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return {};
      buf_.append(b, static_cast<std::size_t>(n));
    }
  }
  // Everything until EOF (or "" on timeout / error before any byte).
  std::string until_eof() {
    std::string all = std::move(buf_);
    char b[65536];
    for (;;) {
      ssize_t n = ::recv(fd_, b, sizeof b, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return n == 0 ? all : all + "<error>";
      all.append(b, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

// SIGTERM, then the exit status (graceful stop: 0).
int stop(child_process& p) {
  p.signal(SIGTERM);
  return p.wait(15s).value_or(-1);
}

std::string run(const std::string& command) {
  std::string out;
  if (FILE* f = ::popen(command.c_str(), "r")) {
    char b[4096];
    for (std::size_t n; (n = std::fread(b, 1, sizeof b, f)) > 0;) out.append(b, n);
    ::pclose(f);
  }
  return out;
}

TEST(ExampleChatServer, LinesReachTheOthersAndASlowReaderIsToldWhatItMissed) {
  child_process server({CHAT_SERVER_PATH, "0"});
  auto port = listening_port(server);
  ASSERT_NE(port, 0) << server.stderr_text();
  client a(port), b(port);
  ASSERT_TRUE(a.connected() && b.connected());
  EXPECT_EQ(a.line(), "* guest2 joined");
  ASSERT_TRUE(a.send("hello\r\n"));
  EXPECT_EQ(b.line(), "guest1: hello");
  ASSERT_TRUE(b.send("hi there\n"));
  EXPECT_EQ(a.line(), "guest2: hi there");

  // c does not read during the flood: the room does not wait for it (b, which
  // reads, gets every line in order); afterwards c is told how many lines it missed
  // and goes on with the newest ones.
  client c(port, 4096);
  EXPECT_EQ(a.line(), "* guest3 joined");
  EXPECT_EQ(b.line(), "* guest3 joined");
  const std::string filler(900, 'x');  // lines up to 1000 bytes are accepted
  std::atomic<int> got{0};
  std::thread flood([&a, &filler, &got] {
    for (int i = 0; i < 2000; ++i) {
      while (got.load() < i - 16) std::this_thread::sleep_for(1ms);  // b keeps up; c cannot
      a.send(filler + std::to_string(i) + "\n");
    }
  });
  bool in_order = true;
  while (got.load() < 2000 && in_order) {
    std::string l = b.line();
    in_order = l == "guest1: " + filler + std::to_string(got.load());
    if (in_order) ++got;
  }
  const int received = got.load();
  if (!in_order) got = 1'000'000;  // lets the flood finish
  flood.join();
  EXPECT_TRUE(in_order) << "b missed a line after " << received;
  bool told = false;
  int last = -1, lines = 0;
  bool ordered = true;
  for (std::string l = c.line(); !l.empty(); l = last == 1999 ? std::string() : c.line()) {
    if (l.starts_with("* you missed ")) {
      told = std::stoi(l.substr(13)) > 0;
      continue;
    }
    if (l.starts_with("* ")) continue;
    const int n = std::stoi(l.substr(8 + filler.size()));
    ordered = ordered && n > last;
    last = n;
    ++lines;
  }
  EXPECT_TRUE(told) << "the slow reader was not told what it missed";
  EXPECT_TRUE(ordered);
  EXPECT_EQ(last, 1999) << "the slow reader did not catch up with the newest lines";
  EXPECT_LT(lines, 2000) << "the slow reader got everything?";
  ::shutdown(a.fd(), SHUT_WR);  // their sessions end, so the stop needs no grace period
  EXPECT_EQ(b.line(), "* guest1 left");
  ::shutdown(b.fd(), SHUT_WR);
  ::shutdown(c.fd(), SHUT_WR);
  EXPECT_EQ(stop(server), 0) << server.stderr_text();
}

std::size_t fds_of(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// 1,000 clients, 20 of which never read (small receive buffers): five talkers' lines
// reach every reading client complete and in order, nobody waits for the slow ones,
// and once everybody has left the server holds no more descriptors than before. The
// clients wait up to 30 s for a line, and the reading ends after 90 s: while the
// host's TCP memory is under pressure (another process's doing), loopback drops
// segments and they arrive only after retransmission timeouts of seconds; a run that
// falls short then is reported as the environment's.
TEST(ExampleChatServer, AThousandClientsWithSlowOnes) {
  const tcp_memory_watch tcp_memory;
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < 4096) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 4096);
    ::setrlimit(RLIMIT_NOFILE, &lim);  // the server inherits it
  }
  if (lim.rlim_cur < 2200) GTEST_SKIP() << "needs 2,200 descriptors";
  child_process server({CHAT_SERVER_PATH, "0"});
  auto port = listening_port(server);
  ASSERT_NE(port, 0) << server.stderr_text();
  const std::size_t fds_before = fds_of(server.pid());
  constexpr int clients = 1000, slow_every = 50, talkers = 5, messages = 20;
  std::vector<std::unique_ptr<client>> all;
  for (int i = 0; i < clients; ++i) {
    all.push_back(std::make_unique<client>(port, i % slow_every == slow_every - 1 ? 4096 : 0));
    ASSERT_TRUE(all.back()->connected()) << "client " << i;
  }
  // A connect returns once the kernel has the connection, not once the server has
  // accepted it: under load the last clients may still wait in the backlog, and a
  // member that joins after a line was said rightly never gets it. The server accepts
  // in order, so the first client seeing the last one join means that all have joined.
  all[0]->receive_timeout(30s);
  const std::string last_join = "* guest" + std::to_string(clients) + " joined";
  for (std::string l = all[0]->line(); l != last_join; l = all[0]->line())
    ASSERT_FALSE(l.empty()) << "the first client never saw the last one join";
  // The talkers are the first five (guest1..guest5); each line carries its number.
  for (int m = 0; m < messages; ++m)
    for (int t = 0; t < talkers; ++t) ASSERT_TRUE(all[t]->send("msg " + std::to_string(m) + "\n"));
  int complete = 0, unread = 0;
  std::vector<std::string> shortfalls;
  const auto reading_ends = std::chrono::steady_clock::now() + 90s;
  for (int i = 0; i < clients; ++i) {
    if (i % slow_every == slow_every - 1) continue;  // never reads
    if (std::chrono::steady_clock::now() > reading_ends) {
      ++unread;
      continue;
    }
    all[i]->receive_timeout(30s);
    std::vector<int> next(talkers, 0);
    int expected = (i < talkers ? talkers - 1 : talkers) * messages, seen = 0, notices = 0;
    bool ordered = true;
    std::string last_line;
    while (seen < expected && ordered) {
      std::string l = all[i]->line();
      if (l.empty()) break;  // timeout or EOF
      last_line = l;
      if (l.starts_with("* ")) {  // joins (and lag notices while everybody joined)
        ++notices;
        continue;
      }
      const int t = std::stoi(l.substr(5)) - 1;  // "guestN: msg M"
      const int m = std::stoi(l.substr(l.find("msg ") + 4));
      ordered = t >= 0 && t < talkers && t != i && m == next[t];
      if (ordered) ++next[t];
      ++seen;
    }
    if (ordered && seen == expected) ++complete;
    else
      shortfalls.push_back("client " + std::to_string(i) + " got " + std::to_string(seen) + " of " +
                           std::to_string(expected) + (ordered ? "" : " (out of order)") + " after " +
                           std::to_string(notices) + " notices; its last line: \"" + last_line + "\"");
  }
  if (complete != clients - clients / slow_every && tcp_memory.troubled())
    GTEST_SKIP() << tcp_memory.describe() << "; " << shortfalls.size() << " clients fell short, " << unread
                 << " were not read before the deadline";
  for (const auto& s : shortfalls) ADD_FAILURE() << s;
  EXPECT_EQ(unread, 0) << "clients not read before the deadline";
  EXPECT_EQ(complete, clients - clients / slow_every);
  all.clear();  // everybody leaves, the slow ones included
  std::size_t fds_after = 0;
  for (int tries = 0; tries < 600; ++tries) {
    fds_after = fds_of(server.pid());
    if (fds_after <= fds_before) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_LE(fds_after, fds_before) << "the server kept descriptors of clients that left";
  client late(port), later(port);  // still serving
  ASSERT_TRUE(late.connected() && later.connected());
  late.receive_timeout(30s);
  later.receive_timeout(30s);
  EXPECT_TRUE(late.line().starts_with("* guest"));
  ASSERT_TRUE(late.send("still here\n"));
  EXPECT_EQ(later.line(), "guest" + std::to_string(clients + 1) + ": still here");
  ::shutdown(late.fd(), SHUT_WR);
  ::shutdown(later.fd(), SHUT_WR);
  EXPECT_EQ(stop(server), 0) << server.stderr_text();
}

TEST(ExampleChatServer, BadArgumentsPrintUsageAndExit2) {
  child_process p({CHAT_SERVER_PATH, "not-a-port"});
  EXPECT_EQ(p.wait(10s).value_or(-1), 2);
  EXPECT_NE(p.stderr_text().find("usage"), std::string::npos);
}

// A backend that echoes each connection until EOF, then closes it.
class echo_backend {
 public:
  echo_backend() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 16);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      char b[65536];
      for (ssize_t n; (n = ::recv(c, b, sizeof b, 0)) > 0;)
        for (ssize_t off = 0; off < n;) {
          ssize_t w = ::send(c, b + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
          if (w <= 0) break;
          off += w;
        }
      ::close(c);
    });
  }
  ~echo_backend() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  echo_backend(const echo_backend&) = delete;
  echo_backend& operator=(const echo_backend&) = delete;
  [[nodiscard]] std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

TEST(ExampleTcpProxy, ForwardsBothWaysAndPassesTheHalfCloseOn) {
  echo_backend backend;
  child_process proxy({TCP_PROXY_PATH, "0", "127.0.0.1:" + std::to_string(backend.port())});
  auto port = listening_port(proxy);
  ASSERT_NE(port, 0) << proxy.stderr_text();
  client c(port);
  ASSERT_TRUE(c.connected());
  std::string data;
  for (int i = 0; data.size() < (1u << 20); ++i) data += std::to_string(i * 7919) + ",";
  std::thread writer([&c, &data] {
    c.send(data);
    ::shutdown(c.fd(), SHUT_WR);  // the proxy passes it on; the echo backend then closes
  });
  std::string back = c.until_eof();
  writer.join();
  EXPECT_TRUE(back == data) << back.size() << " of " << data.size() << " bytes came back";
  auto log = proxy.read_line(5s);
  ASSERT_TRUE(log);
  auto n = std::to_string(data.size());
  EXPECT_EQ(*log, "tcp_proxy: " + n + " bytes up, " + n + " down");
  EXPECT_EQ(stop(proxy), 0) << proxy.stderr_text();
}

// The client hears a reset, not an empty answer that looks complete.
TEST(ExampleTcpProxy, AnUnreachableBackendResetsTheClientAndSaysWhy) {
  std::uint16_t closed_port;
  {
    echo_backend gone;  // a port that nothing listens on once it is destroyed
    closed_port = gone.port();
  }
  child_process proxy({TCP_PROXY_PATH, "0", "127.0.0.1:" + std::to_string(closed_port)});
  auto port = listening_port(proxy);
  ASSERT_NE(port, 0) << proxy.stderr_text();
  client c(port);
  EXPECT_EQ(c.until_eof(), "<error>");
  EXPECT_EQ(errno, ECONNRESET) << std::strerror(errno);
  EXPECT_EQ(stop(proxy), 0);
  EXPECT_NE(proxy.stderr_text().find("refused"), std::string::npos) << proxy.stderr_text();
}

TEST(ExampleTcpProxy, BadArgumentsPrintUsageAndExit2) {
  child_process p({TCP_PROXY_PATH, "9000"});
  EXPECT_EQ(p.wait(10s).value_or(-1), 2);
  child_process q({TCP_PROXY_PATH, "9000", "no such address"});
  EXPECT_EQ(q.wait(10s).value_or(-1), 2);
}

TEST(ExampleHttpApp, AnswersWithCurl) {
  auto dir = std::filesystem::temp_directory_path() / ("ringio-http-app-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "hello.txt") << "static hello\n";
  child_process app({HTTP_APP_PATH, "0", dir.string()});
  auto port = listening_port(app);
  ASSERT_NE(port, 0) << app.stderr_text();
  const std::string base = "curl -s --max-time 10 http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(run(base + "/items/blue%20car"), R"({"id":"blue car","method":"GET"})");
  EXPECT_EQ(run(base + "/search?q=ring+io\\&limit=3"), R"({"query":"ring io","limit":"3"})");
  EXPECT_EQ(run(base + "/search -o /dev/null -w '%{http_code}'"), "400");
  EXPECT_EQ(run(base + "/countdown"), "3...\n2...\n1...\nliftoff\n");
  EXPECT_EQ(run(base + "/static/hello.txt"), "static hello\n");
  EXPECT_EQ(run(base + "/static/missing -o /dev/null -w '%{http_code}'"), "404");
  EXPECT_EQ(stop(app), 0) << app.stderr_text();
  std::filesystem::remove_all(dir);
}

TEST(ExampleHttpGet, FetchesFromALocalServer) {
  auto dir = std::filesystem::temp_directory_path() / ("ringio-http-get-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "hello.txt") << "static hello\n";
  child_process app({HTTP_APP_PATH, "0", dir.string()});
  auto port = listening_port(app);
  ASSERT_NE(port, 0) << app.stderr_text();
  const std::string get = std::string(HTTP_GET_PATH) + " http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(run(get + "/static/hello.txt"), "200 OK\nstatic hello\n");
  EXPECT_EQ(run(get + "/countdown"), "200 OK\n3...\n2...\n1...\nliftoff\n");  // chunked
  EXPECT_EQ(run(get + "/static/missing 2>&1").substr(0, 4), "404 ");
  const std::string head = run(get + "/static/hello.txt --head-only");
  EXPECT_NE(head.find("Content-Length: 13"), std::string::npos) << head;
  EXPECT_EQ(run(std::string(HTTP_GET_PATH) + " http://127.0.0.1:1/ 2>&1"),
            "http_get: could not connect to any address of the host\n");
  EXPECT_EQ(stop(app), 0) << app.stderr_text();
  std::filesystem::remove_all(dir);
}

}  // namespace
