// SPDX-License-Identifier: Apache-2.0
// The chat example under a paste: one client sends 2,000 lines at once to a room of
// 100 readers that drain their sockets as fast as loopback allows, and 4 readers that
// do not read at all. Every fast reader must get every line, in order and without a
// "missed" notice, while the slow ones hold their sockets full; the slow ones are then
// told what they missed and end with the newest line. On every backend (RINGIO_BACKEND
// in the server's environment).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/tcp_memory.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr int fast_readers = 100, slow_readers = 4, lines = 2000;

// One client of the room: its socket and what it has read so far, cut into lines.
struct member {
  int fd = -1;
  std::string pending;      // bytes after the last complete line
  int received = 0;         // burst lines
  int last = -1;            // the last burst line's number
  bool consecutive = true;  // no line missing, none out of order
  bool increasing = true;   // out of order never
  bool told_missed = false;
  bool saw_talker_join = false;
  bool failed = false;  // reset, error or unexpected end of stream
};

// A connected client with a receive buffer of `receive_buffer` bytes (set before the
// connect). A slow reader's is small, with Ethernet-sized segments so that loopback's
// 64 KiB ones do not stall; a fast reader's holds the whole burst, so that a test thread
// the scheduler holds back for a moment never makes the server's sends wait.
int connect_to(std::uint16_t port, int receive_buffer) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  if (receive_buffer < 65536) {
    int mss = 1400;
    ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string burst_line(int i) {
  std::string l = "line " + std::to_string(i) + " ";
  l.resize(96, 'x');  // 2,000 lines: about 200 KB, more than a slow reader's socket holds
  return l + "\n";
}

// Takes the complete lines out of m.pending. `talker` is the burster's guest name.
void take_lines(member& m, const std::string& talker) {
  const std::string prefix = talker + ": line ";
  std::size_t at = 0;
  for (std::size_t nl; (nl = m.pending.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string_view l(m.pending.data() + at, nl - at);
    if (l.starts_with("* you missed ")) m.told_missed = true;
    if (l == "* " + talker + " joined") m.saw_talker_join = true;
    if (!l.starts_with(prefix)) continue;
    const int i = std::atoi(std::string(l.substr(prefix.size())).c_str());
    m.consecutive = m.consecutive && i == m.last + 1;
    m.increasing = m.increasing && i > m.last;
    m.last = i;
    ++m.received;
  }
  m.pending.erase(0, at);
}

// Reads what is there without waiting; false once the stream ended or failed.
bool drain(member& m, const std::string& talker) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(m.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) {
      m.failed = true;
      return false;
    }
    m.pending.append(buf, static_cast<std::size_t>(n));
    take_lines(m, talker);
  }
}

// Polls `members` until every one satisfies `done`, or nothing arrives for `quiet`.
template <class Done>
void read_until(std::vector<member>& members, const std::string& talker, Done done, std::chrono::milliseconds quiet) {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  for (std::size_t i = 0; i < members.size(); ++i) {
    epoll_event e{.events = EPOLLIN, .data = {.u64 = i}};
    ::epoll_ctl(ep, EPOLL_CTL_ADD, members[i].fd, &e);
  }
  auto last_progress = std::chrono::steady_clock::now();
  auto all_done = [&] { return std::all_of(members.begin(), members.end(), done); };
  while (!all_done() && std::chrono::steady_clock::now() - last_progress < quiet) {
    epoll_event ev[64];
    const int n = ::epoll_wait(ep, ev, 64, 100);
    for (int k = 0; k < n; ++k) {
      member& m = members[ev[k].data.u64];
      if (!drain(m, talker)) ::epoll_ctl(ep, EPOLL_CTL_DEL, m.fd, nullptr);
      last_progress = std::chrono::steady_clock::now();
    }
  }
  ::close(ep);
}

class ChatBurst : public ::testing::TestWithParam<const char*> {};

TEST_P(ChatBurst, EveryFastReaderGetsEveryLineAndSlowReadersAreToldWhatTheyMissed) {
  const tcp_memory_watch tcp_memory;
  ::setenv("RINGIO_BACKEND", GetParam(), 1);
  child_process server({CHAT_SERVER_PATH, "0"});
  ::unsetenv("RINGIO_BACKEND");
  auto first = server.read_line(10s);
  ASSERT_TRUE(first) << server.stderr_text();
  const auto port = static_cast<std::uint16_t>(std::stoi(first->substr(first->rfind(':') + 1)));

  // guest1..100 read fast, guest101..104 never read, guest105 pastes.
  std::vector<member> fast(fast_readers), slow(slow_readers);
  for (auto& m : fast) ASSERT_GE(m.fd = connect_to(port, 512 * 1024), 0);
  for (auto& m : slow) ASSERT_GE(m.fd = connect_to(port, 4096), 0);
  const int talker = connect_to(port, 65536);
  ASSERT_GE(talker, 0);
  const std::string talker_name = "guest" + std::to_string(fast_readers + slow_readers + 1);
  read_until(
      fast, talker_name, [](const member& m) { return m.saw_talker_join || m.failed; }, 20s);
  for (const auto& m : fast) ASSERT_TRUE(m.saw_talker_join) << "a reader never saw the talker join";

  std::string paste;
  for (int i = 0; i < lines; ++i) paste += burst_line(i);
  for (std::size_t at = 0; at < paste.size();) {
    ssize_t n = ::send(talker, paste.data() + at, paste.size() - at, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    at += static_cast<std::size_t>(n);
  }
  const auto start = std::chrono::steady_clock::now();
  read_until(
      fast, talker_name, [](const member& m) { return m.last == lines - 1 || m.failed; }, 20s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);

  int lowest = lines, highest = 0, complete = 0;
  for (const auto& m : fast) {
    lowest = std::min(lowest, m.received);
    highest = std::max(highest, m.received);
    complete += m.received == lines && m.consecutive && !m.told_missed ? 1 : 0;
  }
  std::printf("chat burst on %s: %d of %d fast readers got all %d lines (fewest %d, most %d), %lld ms\n", GetParam(),
              complete, fast_readers, lines, lowest, highest, static_cast<long long>(took.count()));
  const bool fast_failed = std::any_of(fast.begin(), fast.end(), [](const member& m) { return m.failed; });
  if ((complete != fast_readers || fast_failed) && tcp_memory.troubled()) GTEST_SKIP() << tcp_memory.describe();
  EXPECT_EQ(complete, fast_readers);
  for (const auto& m : fast) EXPECT_FALSE(m.failed);

  // The slow readers held their sockets full the whole time; now they read, are told
  // what they missed, and end with the newest line.
  read_until(
      slow, talker_name, [](const member& m) { return m.last == lines - 1 || m.failed; }, 20s);
  const bool slow_short = std::any_of(slow.begin(), slow.end(), [](const member& m) { return m.last != lines - 1; });
  if (slow_short && tcp_memory.troubled()) GTEST_SKIP() << "slow readers: " << tcp_memory.describe();
  for (const auto& m : slow) {
    EXPECT_TRUE(m.told_missed) << "a slow reader was not told what it missed";
    EXPECT_TRUE(m.increasing) << "a slow reader got lines out of order";
    EXPECT_EQ(m.last, lines - 1) << "a slow reader did not catch up with the newest line";
  }

  ::close(talker);
  for (auto& m : fast) ::close(m.fd);
  for (auto& m : slow) ::close(m.fd);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(15s).value_or(-1), 0) << server.stderr_text();
}

INSTANTIATE_TEST_SUITE_P(, ChatBurst, ::testing::Values("uring", "epoll", "uring-poll"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
