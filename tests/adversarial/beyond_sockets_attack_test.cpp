// SPDX-License-Identifier: Apache-2.0
// Child processes, spawn_blocking, readiness waits on foreign descriptors and the
// adopting factories, held to the letter of their documentation: nothing left behind
// (no child, no descriptor) on any path, stops at every point, descriptors of every
// kind, wrong kinds refused without side effects, several threads and loops at once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "ringio/blocking/spawn_blocking.hpp"
#include "ringio/net/wait_ready.hpp"
#include "ringio/process.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

bool no_child_left() {
  siginfo_t info{};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

bool reaped(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

bool still_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

std::vector<std::string> sh(std::string script) { return {"/bin/sh", "-c", std::move(script)}; }

// Descriptors of this process without FD_CLOEXEC, above 2.
std::size_t inheritable_fds() {
  std::size_t n = 0;
  for (int fd = 3; fd < 4096; ++fd) {
    const int f = ::fcntl(fd, F_GETFD);
    if (f >= 0 && (f & FD_CLOEXEC) == 0) ++n;
  }
  return n;
}

// A fixture that checks, after each test, that no child and no descriptor is left.
class Attack : public backend_test {
 protected:
  void SetUp() override {
    fds_before_ = open_fd_count();
    backend_test::SetUp();
  }
  void TearDown() override {
    backend_test::TearDown();
    EXPECT_TRUE(no_child_left());
    EXPECT_EQ(open_fd_count(), fds_before_);
  }
  bool sim() const { return GetParam() == backend_kind::sim; }
  std::size_t fds_before_ = 0;
};

class WaitAttack : public Attack {};
class AdoptAttack : public Attack {};
class ProcessAttack : public Attack {};
class BlockingAttack : public Attack {};

// ---------------------------------------------------------------- wait_readable/writable

// A regular file is always readable and writable (poll(2) says so); the wait must
// complete, not fail, on every backend.
TEST_P(WaitAttack, ARegularFileIsReadyAtOnce) {
  char path[] = "/tmp/ringio_wait_file_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  run([](int fd) -> task<void> {
    auto r = co_await with_timeout(wait_readable(fd), 5s);
    EXPECT_TRUE(r.has_value()) << r.error().message();
    auto w = co_await with_timeout(wait_writable(fd), 5s);
    EXPECT_TRUE(w.has_value()) << w.error().message();
  }(fd));
  forget_descriptor(fd);
  ::close(fd);
}

TEST_P(WaitAttack, DevNullIsReadyAtOnce) {
  const int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  run([](int fd) -> task<void> {
    auto r = co_await with_timeout(wait_readable(fd), 5s);
    EXPECT_TRUE(r.has_value()) << r.error().message();
    auto w = co_await with_timeout(wait_writable(fd), 5s);
    EXPECT_TRUE(w.has_value()) << w.error().message();
  }(fd));
  forget_descriptor(fd);
  ::close(fd);
}

// One wait per direction at a time is allowed: a read wait and a write wait on the same
// descriptor at once.
TEST_P(WaitAttack, AReadWaitAndAWriteWaitOnOneDescriptorAtOnce) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  run([](int a, int b) -> task<void> {
    std::optional<result<void>> readable;
    scope s;
    s.spawn([](int a, std::optional<result<void>>& out) -> task<void> {
      out = co_await with_timeout(wait_readable(a), 10s);
    }(a, readable));
    (void)co_await sleep_for(10ms);
    auto w = co_await with_timeout(wait_writable(a), 5s);
    EXPECT_TRUE(w.has_value()) << w.error().message();
    EXPECT_FALSE(readable.has_value());  // nothing to read yet
    EXPECT_EQ(::write(b, "x", 1), 1);
    co_await s.join();
    EXPECT_TRUE(readable.has_value() && readable->has_value());
    // And the other way round: the write wait pending while the read wait completes.
    std::array<char, 65536> block{};
    while (::write(a, block.data(), block.size()) > 0) {
    }
    std::optional<result<void>> writable;
    scope s2;
    s2.spawn([](int a, std::optional<result<void>>& out) -> task<void> {
      out = co_await with_timeout(wait_writable(a), 10s);
    }(a, writable));
    (void)co_await sleep_for(10ms);
    auto r = co_await with_timeout(wait_readable(a), 5s);  // the 'x' is still there
    EXPECT_TRUE(r.has_value());
    EXPECT_FALSE(writable.has_value());
    while (::read(b, block.data(), block.size()) > 0) {
    }
    co_await s2.join();
    EXPECT_TRUE(writable.has_value() && writable->has_value());
  }(sv[0], sv[1]));
  for (int fd : sv) {
    forget_descriptor(fd);
    ::close(fd);
  }
}

// A descriptor closed by other code (and reported with forget_descriptor) whose number
// is then reused for another file: the new file is waited for, not the old one.
TEST_P(WaitAttack, AReusedDescriptorNumberIsWaitedForAfresh) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
  const int number = p[0];
  ASSERT_EQ(::write(p[1], "x", 1), 1);
  run([](int r) -> task<void> { EXPECT_TRUE((co_await with_timeout(wait_readable(r), 5s)).has_value()); }(number));
  forget_descriptor(p[0]);
  ::close(p[0]);
  forget_descriptor(p[1]);
  ::close(p[1]);
  const int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  if (efd != number) {
    ASSERT_EQ(::dup3(efd, number, O_CLOEXEC), number);
    ::close(efd);
  }
  run([](int e) -> task<void> {
    auto early = co_await with_timeout(wait_readable(e), 50ms);  // counter 0: not readable
    EXPECT_FALSE(early.has_value());
    if (!early) {
      EXPECT_EQ(early.error(), std::errc::timed_out);
    }
    scope s;
    s.spawn([](int e) -> task<void> {
      (void)co_await sleep_for(10ms);
      const std::uint64_t one = 1;
      EXPECT_EQ(::write(e, &one, sizeof one), 8);
    }(e));
    auto r = co_await with_timeout(wait_readable(e), 10s);
    EXPECT_TRUE(r.has_value()) << r.error().message();
    co_await s.join();
  }(number));
  forget_descriptor(number);
  ::close(number);
}

// Closed by someone else while waited on: a stop still ends the wait, and the number,
// reused, can be waited on again.
TEST_P(WaitAttack, ClosedWhileWaitedOnThenStoppedThenReused) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
  const int number = p[0];
  run([](int r, int w) -> task<void> {
    std::stop_source stop;
    std::optional<result<void>> out;
    scope s;
    s.spawn([](int r, std::stop_token tok, std::optional<result<void>>& out) -> task<void> {
      out = co_await wait_readable(r).with_stop(tok);
    }(r, stop.get_token(), out));
    (void)co_await sleep_for(10ms);
    forget_descriptor(r);
    ::close(r);
    (void)co_await sleep_for(10ms);
    stop.request_stop();
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!out && std::chrono::steady_clock::now() < until) (void)co_await sleep_for(1ms);
    EXPECT_TRUE(out.has_value()) << "the stopped wait never ended";
    co_await s.join();
    // The number comes back for a new pipe.
    int q[2];
    EXPECT_EQ(::pipe2(q, O_NONBLOCK | O_CLOEXEC), 0);
    if (q[0] != r) {
      EXPECT_EQ(::dup3(q[0], r, O_CLOEXEC), r);
      ::close(q[0]);
    }
    EXPECT_EQ(::write(q[1], "y", 1), 1);
    auto again = co_await with_timeout(wait_readable(r), 5s);
    EXPECT_TRUE(again.has_value()) << again.error().message();
    forget_descriptor(r);
    ::close(r);
    ::close(q[1]);
    ::close(w);
  }(number, p[1]));
}

// Hang-up and error conditions count as ready in both directions.
TEST_P(WaitAttack, HangUpsAndErrorsCountAsReadyBothWays) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
  ::close(p[0]);  // the reader is gone: the write end has POLLERR
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  ::close(sv[1]);
  run([](int w, int s) -> task<void> {
    auto a = co_await with_timeout(wait_writable(w), 5s);
    EXPECT_TRUE(a.has_value()) << a.error().message();
    auto b = co_await with_timeout(wait_readable(s), 5s);
    EXPECT_TRUE(b.has_value()) << b.error().message();
    auto c = co_await with_timeout(wait_writable(s), 5s);
    EXPECT_TRUE(c.has_value()) << c.error().message();
  }(p[1], sv[0]));
  for (int fd : {p[1], sv[0]}) {
    forget_descriptor(fd);
    ::close(fd);
  }
}

// eventfd, timerfd and a child's pidfd.
TEST_P(WaitAttack, EventfdTimerfdAndPidfd) {
  const int efd = ::eventfd(0, EFD_CLOEXEC);  // blocking: its mode is left alone
  const int tfd = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  ASSERT_GE(tfd, 0);
  itimerspec its{};
  its.it_value.tv_nsec = 20'000'000;
  ASSERT_EQ(::timerfd_settime(tfd, 0, &its, nullptr), 0);
  std::thread writer([efd] {
    std::this_thread::sleep_for(20ms);
    const std::uint64_t one = 1;
    (void)::write(efd, &one, sizeof one);
  });
  run([](int efd, int tfd) -> task<void> {
    auto e = co_await with_timeout(wait_readable(efd), 10s);
    EXPECT_TRUE(e.has_value()) << e.error().message();
    EXPECT_EQ(::fcntl(efd, F_GETFL) & O_NONBLOCK, 0);
    auto t = co_await with_timeout(wait_readable(tfd), 10s);
    EXPECT_TRUE(t.has_value()) << t.error().message();
    std::vector<std::string> argv{"sleep", "0.05"};
    auto c = process::spawn(argv);
    EXPECT_TRUE(c);
    if (!c) co_return;
    auto p = co_await with_timeout(wait_readable(c->native_handle()), 10s);
    EXPECT_TRUE(p.has_value()) << p.error().message();
    forget_descriptor(c->native_handle());
    auto st = co_await c->wait();
    EXPECT_TRUE(st && st->success());
  }(efd, tfd));
  writer.join();
  for (int fd : {efd, tfd}) {
    forget_descriptor(fd);
    ::close(fd);
  }
}

task<void> expect_bad_descriptor(int fd) {
  auto r = co_await with_timeout(wait_readable(fd), 5s);
  EXPECT_FALSE(r.has_value());
  if (!r) {
    EXPECT_EQ(r.error(), std::errc::bad_file_descriptor) << fd << ": " << r.error().message();
  }
  auto w = co_await with_timeout(wait_writable(fd), 5s);
  EXPECT_FALSE(w.has_value());
  if (!w) {
    EXPECT_EQ(w.error(), std::errc::bad_file_descriptor) << fd << ": " << w.error().message();
  }
}

TEST_P(WaitAttack, ANegativeDescriptorIsBadFileDescriptor) { run(expect_bad_descriptor(-1)); }

TEST_P(WaitAttack, ANumberThatIsNotOpenIsBadFileDescriptor) {
  int unused = 900;
  while (still_open(unused)) ++unused;
  run(expect_bad_descriptor(unused));
}

// A descriptor with a high number (a program with many open files).
TEST_P(WaitAttack, AHighDescriptorNumber) {
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  const int high = static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 65536)) - 1;
  if (high < 1024) GTEST_SKIP() << "RLIMIT_NOFILE is only " << rl.rlim_cur;
  if (still_open(high)) GTEST_SKIP() << "descriptor " << high << " is in use";
  int p[2];
  ASSERT_EQ(::pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
  ASSERT_EQ(::dup3(p[0], high, O_CLOEXEC), high);
  ::close(p[0]);
  ASSERT_EQ(::write(p[1], "x", 1), 1);
  run([](int fd) -> task<void> {
    auto r = co_await with_timeout(wait_readable(fd), 5s);
    EXPECT_TRUE(r.has_value()) << r.error().message();
  }(high));
  forget_descriptor(high);
  ::close(high);
  ::close(p[1]);
}

// One descriptor waited on by two loops on two threads (one wait per loop).
TEST_P(WaitAttack, TwoLoopsWaitOnOneEventfd) {
  if (sim()) GTEST_SKIP() << "one simulated world per thread: the second loop would need its own";
  const int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  std::atomic<int> ok{0}, waiting{0};
  auto loop = [&] {
    io_context ctx({.backend = GetParam(), .quiet = true});
    sync_wait(ctx, [](int efd, std::atomic<int>& ok, std::atomic<int>& waiting) -> task<void> {
      waiting.fetch_add(1);
      auto r = co_await with_timeout(wait_readable(efd), 10s);
      if (r) ok.fetch_add(1);
    }(efd, ok, waiting));
  };
  std::thread a(loop), b(loop);
  while (waiting.load() < 2) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);
  const std::uint64_t one = 1;
  EXPECT_EQ(::write(efd, &one, sizeof one), 8);
  a.join();
  b.join();
  EXPECT_EQ(ok.load(), 2);
  forget_descriptor(efd);
  ::close(efd);
}

// A descriptor waited on with wait_readable and then adopted as a stream_socket: the
// socket's own receives still see data.
TEST_P(WaitAttack, AWaitedDescriptorAdoptedAfterwardsStillReceives) {
  if (sim()) GTEST_SKIP() << "adopted sockets are real kernel sockets, not simulated ones";
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_EQ(::write(sv[1], "a", 1), 1);
  run([](int a) -> task<void> {
    EXPECT_TRUE((co_await with_timeout(wait_readable(a), 5s)).has_value());
    char c;
    EXPECT_EQ(::read(a, &c, 1), 1);
  }(sv[0]));
  auto s = stream_socket::adopt(sv[0]);
  ASSERT_TRUE(s) << s.error().message();
  std::thread writer([peer = sv[1]] {
    std::this_thread::sleep_for(30ms);
    (void)::write(peer, "ping", 4);
  });
  run([](stream_socket& s) -> task<void> {
    std::array<char, 4> buf{};
    auto n = co_await with_timeout(s.recv_exact(mutable_buffer(buf.data(), buf.size())), 10s);
    EXPECT_TRUE(n.has_value()) << n.error().message();
  }(*s));
  writer.join();
  ::close(sv[1]);
}

// ---------------------------------------------------------------- adopt

std::pair<int, int> connected_tcp_pair(int family) {
  const int l = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  }
  if (::bind(l, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(l, 4) != 0) {
    ::close(l);
    return {-1, -1};
  }
  ::getsockname(l, reinterpret_cast<sockaddr*>(&ss), &len);
  const int c = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(c, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    ::close(c);
    ::close(l);
    return {-1, -1};
  }
  const int s = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(l);
  return {c, s};
}

// Every refusal leaves the descriptor exactly as it was: open, same status flags, same
// descriptor flags.
TEST_P(AdoptAttack, RefusalsChangeNothing) {
  struct probe {
    const char* what;
    int fd;
  };
  std::vector<probe> fds;
  fds.push_back({"udp", ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)});
  fds.push_back({"unconnected tcp", ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)});
  int sp[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
  fds.push_back({"seqpacket", sp[0]});
  fds.push_back({"unix dgram", ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)});
  fds.push_back({"eventfd", ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)});
  fds.push_back({"directory", ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK)});
  fds.push_back({"dev null", ::open("/dev/null", O_RDWR | O_CLOEXEC | O_NONBLOCK)});
  for (auto& p : fds) {
    ASSERT_GE(p.fd, 0) << p.what;
    const int fl = ::fcntl(p.fd, F_GETFL);
    const int fdfl = ::fcntl(p.fd, F_GETFD);
    auto s = stream_socket::adopt(p.fd);
    EXPECT_FALSE(s.has_value()) << p.what;
    auto l = stream_listener::adopt(p.fd);
    EXPECT_FALSE(l.has_value()) << p.what;
    auto f = file::adopt(p.fd);
    EXPECT_FALSE(f.has_value()) << p.what;
    EXPECT_TRUE(still_open(p.fd)) << p.what;
    EXPECT_EQ(::fcntl(p.fd, F_GETFL), fl) << p.what;
    EXPECT_EQ(::fcntl(p.fd, F_GETFD), fdfl) << p.what;
  }
  EXPECT_EQ(stream_socket::adopt(fds[0].fd).error(), std::errc::wrong_protocol_type);
  EXPECT_EQ(stream_socket::adopt(fds[2].fd).error(), std::errc::wrong_protocol_type);
  EXPECT_EQ(stream_socket::adopt(fds[3].fd).error(), std::errc::wrong_protocol_type);
  EXPECT_EQ(stream_listener::adopt(fds[0].fd).error(), std::errc::wrong_protocol_type);
  EXPECT_EQ(stream_socket::adopt(fds[4].fd).error(), std::errc::not_a_socket);
  EXPECT_EQ(file::adopt(fds[4].fd).error(), std::errc::invalid_argument);
  EXPECT_EQ(file::adopt(fds[5].fd).error(), std::errc::is_a_directory);
  EXPECT_EQ(file::adopt(fds[6].fd).error(), std::errc::invalid_argument);
  for (auto& p : fds) ::close(p.fd);
  ::close(sp[1]);
}

TEST_P(AdoptAttack, ConnectedVersusListeningOfBothFamilies) {
  // A connected socket is not a listener.
  auto [c, s] = connected_tcp_pair(AF_INET);
  ASSERT_GE(c, 0);
  EXPECT_EQ(stream_listener::adopt(c).error(), std::errc::invalid_argument);
  EXPECT_TRUE(still_open(c));
  // A listening Unix socket is a listener, not a stream.
  const int ul = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  const std::string name = "ringio-adopt-attack-" + std::to_string(::getpid());
  std::memcpy(un.sun_path + 1, name.data(), name.size());  // abstract
  ASSERT_EQ(::bind(ul, reinterpret_cast<sockaddr*>(&un), offsetof(sockaddr_un, sun_path) + 1 + name.size()), 0);
  ASSERT_EQ(::listen(ul, 4), 0);
  EXPECT_EQ(stream_socket::adopt(ul).error(), std::errc::invalid_argument);
  EXPECT_TRUE(still_open(ul));
  auto listener = stream_listener::adopt(ul);
  EXPECT_TRUE(listener) << listener.error().message();
  // An unconnected Unix stream socket.
  const int uu = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(stream_socket::adopt(uu).error(), std::errc::not_connected);
  EXPECT_TRUE(still_open(uu));
  ::close(uu);
  // IPv6, when the machine has it.
  auto [c6, s6] = connected_tcp_pair(AF_INET6);
  if (c6 >= 0) {
    auto a6 = stream_socket::adopt(c6);
    EXPECT_TRUE(a6) << a6.error().message();
    ::close(s6);
  }
  ::close(c);
  ::close(s);
}

// Ownership after success: destroying closes, release() gives the descriptor back.
TEST_P(AdoptAttack, OwnershipAfterSuccess) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  {
    auto s = stream_socket::adopt(sv[0]);
    ASSERT_TRUE(s);
  }
  EXPECT_FALSE(still_open(sv[0]));
  {
    auto s = stream_socket::adopt(sv[1]);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->release(), sv[1]);
  }
  EXPECT_TRUE(still_open(sv[1]));
  ::close(sv[1]);
  char path[] = "/tmp/ringio_adopt_own_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  const int fl = ::fcntl(fd, F_GETFL);
  {
    auto f = file::adopt(fd);
    ASSERT_TRUE(f);
    EXPECT_EQ(::fcntl(fd, F_GETFL), fl);  // a file's flags are kept
  }
  EXPECT_FALSE(still_open(fd));
}

TEST_P(AdoptAttack, ClosedNumbersAreBadFileDescriptor) {
  int unused = 900;
  while (still_open(unused)) ++unused;
  EXPECT_EQ(stream_socket::adopt(unused).error(), std::errc::bad_file_descriptor);
  EXPECT_EQ(stream_listener::adopt(unused).error(), std::errc::bad_file_descriptor);
  EXPECT_EQ(stream_listener::adopt(-1).error(), std::errc::bad_file_descriptor);
  EXPECT_EQ(file::adopt(unused).error(), std::errc::bad_file_descriptor);
}

// ---------------------------------------------------------------- pipes

// A blocking pipe adopted with from_descriptor: reads and writes that cannot proceed
// do not block the loop (a deadline still fires).
TEST_P(AdoptAttack, BlockingPipesNeverBlockTheLoop) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);  // blocking
  auto r = process::pipe_reader::from_descriptor(p[0]);
  auto w = process::pipe_writer::from_descriptor(p[1]);
  run([](process::pipe_reader& r, process::pipe_writer& w) -> task<void> {
    std::array<char, 16> buf{};
    auto n = co_await with_timeout(r.read_some(mutable_buffer(buf.data(), buf.size())), 50ms);
    EXPECT_FALSE(n.has_value());
    if (!n) {
      EXPECT_EQ(n.error(), std::errc::timed_out);
    }
    std::string big(4 << 20, 'z');  // more than the pipe holds
    auto wr = co_await with_timeout(w.write_all(const_buffer(big.data(), big.size())), 100ms);
    EXPECT_FALSE(wr.has_value());
    if (!wr) {
      EXPECT_EQ(wr.error(), std::errc::timed_out);
    }
  }(r, w));
  EXPECT_EQ(::fcntl(p[0], F_GETFL) & O_NONBLOCK, 0);
}

// read_to_end's bound: exactly max_bytes is fine; one more is message_too_long, and the
// rest stays unread in the pipe.
TEST_P(AdoptAttack, ReadToEndBoundIsExact) {
  for (std::size_t max : {std::size_t{10}, std::size_t{9}, std::size_t{4}}) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    ASSERT_EQ(::write(p[1], "0123456789", 10), 10);
    ::close(p[1]);
    auto r = process::pipe_reader::from_descriptor(p[0]);
    run([](process::pipe_reader& r, std::size_t max) -> task<void> {
      auto all = co_await r.read_to_end(max);
      if (max >= 10) {
        EXPECT_TRUE(all.has_value());
        if (all) {
          EXPECT_EQ(*all, "0123456789");
        }
        co_return;
      }
      EXPECT_FALSE(all.has_value());
      if (!all) {
        EXPECT_EQ(all.error(), ringio::errc::message_too_long);
      }
      std::string rest;
      std::array<char, 64> buf{};
      for (;;) {
        auto n = co_await r.read_some(mutable_buffer(buf.data(), buf.size()));
        if (!n || *n == 0) break;
        rest.append(buf.data(), *n);
      }
      // "the rest stays unread": what follows the bound is still in the pipe.
      EXPECT_GE(rest.size(), 10 - (max + 1)) << "max " << max << ", left in the pipe: '" << rest << "'";
    }(r, max));
  }
}

// Pipes that hold no descriptor: an error, not a crash.
TEST_P(AdoptAttack, PipesWithoutADescriptorFailCleanly) {
  process::pipe_reader r;
  process::pipe_writer w;
  EXPECT_FALSE(r.is_open());
  EXPECT_FALSE(w.is_open());
  run([](process::pipe_reader& r, process::pipe_writer& w) -> task<void> {
    std::array<char, 4> buf{};
    auto n = co_await with_timeout(r.read_some(mutable_buffer(buf.data(), buf.size())), 5s);
    EXPECT_FALSE(n.has_value());
    if (!n) {
      EXPECT_EQ(n.error(), std::errc::bad_file_descriptor) << n.error().message();
    }
    auto m = co_await with_timeout(w.write_some(const_buffer("x", 1)), 5s);
    EXPECT_FALSE(m.has_value());
    if (!m) {
      EXPECT_EQ(m.error(), std::errc::bad_file_descriptor) << m.error().message();
    }
  }(r, w));
}

// A child that holds no process: its wait fails, it does not hang or crash.
TEST_P(ProcessAttack, AnEmptyChildCannotBeWaitedFor) {
  process::child c;
  EXPECT_FALSE(c.running());
  EXPECT_FALSE(c.kill(SIGTERM).has_value());
  run([](process::child& c) -> task<void> {
    auto st = co_await with_timeout(c.wait(), 5s);
    EXPECT_FALSE(st.has_value());
    if (!st) {
      EXPECT_NE(st.error(), std::errc::timed_out);
    }
  }(c));
}

// Failed spawns leave nothing: a missing program, a missing working directory, with
// every stream a pipe.
TEST_P(ProcessAttack, FailedSpawnsLeaveNothing) {
  process::spawn_options o;
  o.in = o.out = o.err = process::stdio::pipe;
  std::vector<std::string> missing{"ringio-no-such-program-anywhere"};
  auto a = process::spawn(missing, o);
  EXPECT_FALSE(a.has_value());
  if (!a) {
    EXPECT_EQ(a.error(), std::errc::no_such_file_or_directory);
  }
  o.working_directory = "/nonexistent/ringio/dir";
  std::vector<std::string> t{"true"};
  auto b = process::spawn(t, o);
  EXPECT_FALSE(b.has_value());
  if (!b) {
    EXPECT_EQ(b.error(), std::errc::no_such_file_or_directory);
  }
  std::vector<std::string> empty;
  auto c = process::spawn(empty, o);
  EXPECT_FALSE(c.has_value());
  if (!c) {
    EXPECT_EQ(c.error(), std::errc::invalid_argument);
  }
}

// ---------------------------------------------------------------- processes

// The child starts with no signal blocked and none ignored, even when the parent's
// loop blocks signals (signal_set), a pipe_writer made SIGPIPE ignored, and the
// program installed its own SIGCHLD handler.
std::atomic<int> sigchld_seen{0};
void count_sigchld(int) { sigchld_seen.fetch_add(1); }

TEST_P(ProcessAttack, ChildSignalsStartAtTheirDefaults) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = count_sigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(SIGCHLD, &sa, &old), 0);
  struct sigaction ign {
  }, old_usr2{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGUSR2, &ign, &old_usr2), 0);
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &mask, &old_mask);
  run([]() -> task<void> {
    process::spawn_options o;
    o.in = o.out = process::stdio::pipe;
    std::vector<std::string> argv{"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"};
    auto c = process::spawn(argv, o);
    EXPECT_TRUE(c);
    if (!c) co_return;
    auto out = co_await with_timeout(c->out.read_to_end(), 10s);
    EXPECT_TRUE(out.has_value());
    auto st = co_await c->wait();
    EXPECT_TRUE(st && st->success());
    if (out) {
      EXPECT_NE(out->find("SigBlk:\t0000000000000000"), std::string::npos) << *out;
      EXPECT_NE(out->find("SigIgn:\t0000000000000000"), std::string::npos) << *out;
    }
  }());
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGUSR2, &old_usr2, nullptr);
  ::sigaction(SIGCHLD, &old, nullptr);
  EXPECT_GT(sigchld_seen.load(), 0);
}

// With a loop, its blocking pool, a signal_set and another child's pipes all open, the
// child gets none of ringio's descriptors.
TEST_P(ProcessAttack, ChildGetsNoneOfRingiosDescriptors) {
  const std::size_t allowed = inheritable_fds();
  run([](std::size_t allowed, bool sim) -> task<void> {
    signal_set sigs{SIGUSR1};
    auto nothing = [] { return 1; };
    EXPECT_TRUE((co_await spawn_blocking(nothing)).has_value());
    process::spawn_options all;
    all.in = all.out = all.err = process::stdio::pipe;
    std::vector<std::string> cat{"cat"};
    auto other = process::spawn(cat, all);
    EXPECT_TRUE(other);
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    auto adopted = stream_socket::adopt(sv[0]);
    (void)sim;
    process::spawn_options o;
    o.out = process::stdio::pipe;
    std::vector<std::string> ls{"ls", "-l", "/proc/self/fd"};
    auto c = process::spawn(ls, o);
    EXPECT_TRUE(c);
    if (!c) co_return;
    auto out = co_await with_timeout(c->out.read_to_end(), 10s);
    EXPECT_TRUE(out.has_value());
    (void)co_await c->wait();
    if (out) {
      std::istringstream lines(*out);
      std::string line;
      std::size_t above2 = 0;
      while (std::getline(lines, line)) {
        auto arrow = line.find(" -> ");
        if (arrow == std::string::npos) continue;
        auto sp = line.rfind(' ', arrow - 1);
        const int n = std::atoi(line.c_str() + sp + 1);
        if (n > 2) ++above2;
      }
      // ls's own directory stream, plus whatever this process opened without CLOEXEC.
      EXPECT_LE(above2, 1 + allowed) << *out;
    }
    ::close(sv[1]);
  }(allowed, sim()));
}

// Arguments with odd bytes arrive exactly.
TEST_P(ProcessAttack, ArgumentsWithOddBytesArriveExactly) {
  run([]() -> task<void> {
    std::vector<std::string> args{"", " ", "\xff\xfe\x80", "a\nb", "-", "$HOME", "*", "--", std::string(100000, 'q')};
    std::vector<std::string> argv{"/bin/sh", "-c", "for a; do printf '%s|' \"$a\"; done", "sh"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = co_await process::output(argv);
    EXPECT_TRUE(r.has_value());
    if (!r) co_return;
    std::string expected;
    for (auto& a : args) expected += a + "|";
    EXPECT_TRUE(r->out == expected) << r->out.size() << " vs " << expected.size();
    EXPECT_TRUE(r->status.success());
  }());
}

// An environment too large for exec: an error from spawn, and nothing left behind.
TEST_P(ProcessAttack, HugeEnvironmentsFailCleanlyOrArriveWhole) {
  run([]() -> task<void> {
    process::spawn_options o;
    o.in = o.out = o.err = process::stdio::pipe;
    o.env.push_back("BIG=" + std::string(200 * 1024, 'x'));  // past MAX_ARG_STRLEN
    std::vector<std::string> argv{"true"};
    auto c = process::spawn(argv, o);
    EXPECT_FALSE(c.has_value());
    if (!c) {
      EXPECT_EQ(c.error(), std::errc::argument_list_too_long) << c.error().message();
    }
    process::spawn_options many;
    many.out = process::stdio::pipe;
    for (int i = 0; i < 200; ++i) many.env.push_back("V" + std::to_string(i) + "=" + std::string(100 * 1024, 'y'));
    auto d = process::spawn(argv, many);  // 20 MB in all
    if (d) {
      auto st = co_await d->wait();
      EXPECT_TRUE(st && st->success());
    } else {
      EXPECT_EQ(d.error(), std::errc::argument_list_too_long) << d.error().message();
    }
    // A large one that fits arrives whole.
    process::spawn_options fits;
    fits.env.push_back("BIG=" + std::string(100 * 1024, 'x'));
    std::vector<std::string> count = sh("printf %s \"$BIG\" | wc -c");
    fits.out = process::stdio::pipe;
    auto e = process::spawn(count, fits);
    EXPECT_TRUE(e);
    if (!e) co_return;
    auto out = co_await e->out.read_to_end();
    EXPECT_TRUE(out && std::atoi(out->c_str()) == 100 * 1024);
    (void)co_await e->wait();
  }());
}

// Children that exit before spawn returns, and children killed from outside.
TEST_P(ProcessAttack, ExitedBeforeSpawnReturnsAndKilledFromOutside) {
  run([]() -> task<void> {
    std::vector<std::string> t{"true"};
    auto quick = process::spawn(t);
    EXPECT_TRUE(quick);
    std::this_thread::sleep_for(50ms);              // surely a zombie now
    EXPECT_TRUE(quick->kill(SIGTERM).has_value());  // exited, not reaped: succeeds
    auto q = co_await quick->wait_or_kill(0ms);
    EXPECT_TRUE(q.has_value());
    if (q) {
      EXPECT_TRUE(q->success()) << q->code << " " << q->signal;
    }
    std::vector<std::string> sl{"sleep", "100"};
    auto slow = process::spawn(sl);
    EXPECT_TRUE(slow);
    EXPECT_EQ(::kill(slow->id(), SIGKILL), 0);
    auto s = co_await with_timeout(slow->wait(), 10s);
    EXPECT_TRUE(s.has_value());
    if (s) {
      EXPECT_EQ(s->signal, SIGKILL);
    }
    EXPECT_EQ(slow->kill(SIGKILL).error(), std::errc::no_such_process);
  }());
}

// A grandchild holding the pipes after the child died: the wait ends, a deadline on
// output() ends it, and nothing of this process is left.
TEST_P(ProcessAttack, GrandchildHoldsThePipesAfterTheChildDied) {
  run([]() -> task<void> {
    process::spawn_options o;
    o.out = o.err = process::stdio::pipe;
    auto argv = sh("sleep 3 & echo started");
    auto c = process::spawn(argv, o);
    EXPECT_TRUE(c);
    if (!c) co_return;
    auto st = co_await with_timeout(c->wait(), 10s);
    EXPECT_TRUE(st && st->success());
    auto rest = co_await with_timeout(c->out.read_to_end(), 100ms);
    EXPECT_FALSE(rest.has_value());  // the grandchild still holds the write end
    auto argv2 = sh("sleep 3 & echo hi");
    auto r = co_await with_timeout(process::output(argv2), 300ms);
    EXPECT_FALSE(r.has_value());
    if (!r) {
      EXPECT_EQ(r.error(), std::errc::timed_out);
    }
  }());
}

TEST_P(ProcessAttack, OutputBoundIsExactOnBothStreams) {
  run([]() -> task<void> {
    auto out4 = sh("printf abcd");
    auto a = co_await process::output(out4, "", 4);
    EXPECT_TRUE(a.has_value()) << a.error().message();
    if (a) {
      EXPECT_EQ(a->out, "abcd");
    }
    auto b = co_await process::output(out4, "", 3);
    EXPECT_FALSE(b.has_value());
    if (!b) {
      EXPECT_EQ(b.error(), ringio::errc::message_too_long);
    }
    auto err4 = sh("printf abcd >&2");
    auto c = co_await process::output(err4, "", 4);
    EXPECT_TRUE(c.has_value()) << c.error().message();
    if (c) {
      EXPECT_EQ(c->err, "abcd");
    }
    auto d = co_await process::output(err4, "", 3);
    EXPECT_FALSE(d.has_value());
    auto zero = co_await process::output(sh("exit 0"), "", 0);
    EXPECT_TRUE(zero.has_value());
  }());
}

// A child that closes its standard output early and floods its standard error; a child
// that writes forever, stopped by a deadline.
TEST_P(ProcessAttack, OutputAgainstEarlyClosersAndEndlessWriters) {
  run([]() -> task<void> {
    auto flood = sh("exec 1>&-; exec yes >&2");
    auto a = co_await with_timeout(process::output(flood, "", 64 * 1024), 20s);
    EXPECT_FALSE(a.has_value());
    if (!a) {
      EXPECT_EQ(a.error(), ringio::errc::message_too_long);
    }
    std::vector<std::string> yes{"yes"};
    auto b = co_await with_timeout(process::output(yes, "", std::size_t{1} << 40), 100ms);
    EXPECT_FALSE(b.has_value());
    if (!b) {
      EXPECT_EQ(b.error(), std::errc::timed_out);
    }
    // Input the child never reads.
    auto ignore = sh("exit 3");
    auto c = co_await with_timeout(process::output(ignore, std::string(1 << 20, 'i')), 20s);
    if (c) {
      EXPECT_EQ(c->status.code, 3);
    } else {
      EXPECT_NE(c.error(), std::errc::timed_out);
    }
  }());
}

// wait_or_kill against a child that ignores SIGTERM and has children of its own; a stop
// in either phase leaves the child running and waitable.
TEST_P(ProcessAttack, WaitOrKillAgainstTermIgnoringForkers) {
  run([]() -> task<void> {
    process::spawn_options o;
    o.out = process::stdio::pipe;
    // A group of its own, and no inherited stderr: the orphaned sleeps are killed at the
    // end and hold none of the test's own descriptors meanwhile.
    o.err = process::stdio::null;
    o.new_process_group = true;
    auto argv = sh("trap '' TERM; sleep 30 & sleep 30 & echo ready; wait; wait");
    auto c = process::spawn(argv, o);
    EXPECT_TRUE(c);
    if (!c) co_return;
    std::array<char, 16> buf{};
    (void)co_await c->out.read_some(mutable_buffer(buf.data(), buf.size()));
    const auto t0 = std::chrono::steady_clock::now();
    auto st = co_await with_timeout(c->wait_or_kill(20ms, 50ms), 20s);
    EXPECT_TRUE(st.has_value());
    if (st) {
      EXPECT_EQ(st->signal, SIGKILL);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
    ::kill(-c->id(), SIGKILL);  // the shell's sleeps

    // Stops in the timeout phase and in the grace phase.
    for (auto [timeout, grace] : {std::pair{10s, 0s}, std::pair{std::chrono::seconds(0), std::chrono::seconds(10)}}) {
      auto d = process::spawn(argv, o);
      EXPECT_TRUE(d);
      if (!d) co_return;
      (void)co_await d->out.read_some(mutable_buffer(buf.data(), buf.size()));
      auto stopped = co_await with_timeout(d->wait_or_kill(timeout, grace), 100ms);
      EXPECT_FALSE(stopped.has_value());
      EXPECT_TRUE(d->running());
      EXPECT_EQ(::kill(d->id(), 0), 0);
      auto end = co_await with_timeout(d->wait_or_kill(0ms), 20s);
      EXPECT_TRUE(end && end->signal == SIGKILL);
      ::kill(-d->id(), SIGKILL);
    }
  }());
}

// Stops at every point of a wait: with_timeout with growing deadlines until the child
// ends; then the status is right.
TEST_P(ProcessAttack, StoppedAtEveryPointTheWaitStillEndsRight) {
  const std::uint64_t seed = test_seed();  // printed with its replay line
  run([](std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 10; ++round) {
      auto argv = sh("sleep 0.02; exit 5");
      auto c = process::spawn(argv);
      EXPECT_TRUE(c);
      if (!c) co_return;
      for (int i = 0; i < 100000; ++i) {
        auto st = co_await with_timeout(c->wait(), std::chrono::microseconds(rng() % 3000));
        if (st) {
          EXPECT_EQ(st->code, 5);
          break;
        }
        EXPECT_EQ(st.error(), std::errc::timed_out);
      }
      EXPECT_FALSE(c->running());
    }
  }(seed));
}

// Spawning from several threads and several loops at once.
TEST_P(ProcessAttack, ManyThreadsAndLoopsSpawnAtOnce) {
  if (sim()) GTEST_SKIP() << "one simulated world per thread";
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ok, kind = GetParam()] {
      io_context ctx({.backend = kind, .quiet = true});
      sync_wait(ctx, [](std::atomic<int>& ok) -> task<void> {
        scope s;
        for (int i = 0; i < 12; ++i) {
          s.spawn([](std::atomic<int>& ok, int i) -> task<void> {
            auto argv = sh("echo " + std::to_string(i));
            auto r = co_await with_timeout(process::output(argv), 30s);
            if (r && r->status.success() && r->out == std::to_string(i) + "\n") ok.fetch_add(1);
          }(ok, i));
        }
        co_await s.join();
      }(ok));
    });
  }
  threads.emplace_back([] {
    for (int i = 0; i < 20; ++i) {
      std::vector<std::string> argv{"sleep", "10"};
      auto c = process::spawn(argv);  // no loop at all; destroyed at once
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 48);
}

// A child moved into a task that never runs, its context destroyed; a child assigned
// over; a child destroyed with no loop anywhere.
TEST_P(ProcessAttack, ChildrenDestroyedAtTheEarliestMoment) {
  pid_t a = -1, b = -1, c = -1;
  {
    std::vector<std::string> argv{"sleep", "100"};
    auto x = process::spawn(argv);
    ASSERT_TRUE(x);
    a = x->id();
    io_context other({.backend = GetParam(), .quiet = true});
    other.spawn([](process::child c) -> task<void> { (void)co_await c.wait(); }(std::move(*x)));
  }
  EXPECT_TRUE(reaped(a));
  {
    std::vector<std::string> argv{"sleep", "100"};
    auto x = process::spawn(argv);
    auto y = process::spawn(argv);
    ASSERT_TRUE(x && y);
    b = x->id();
    c = y->id();
    *x = std::move(*y);
    EXPECT_TRUE(reaped(b));
    EXPECT_EQ(x->id(), c);
  }
  EXPECT_TRUE(reaped(c));
}

// A runtime (several loops) stopped while its tasks wait for children.
TEST_P(ProcessAttack, RuntimeStoppedWhileTasksWait) {
  if (sim()) GTEST_SKIP() << "the runtime's loops are real";
  std::atomic<int> started{0};
  std::vector<pid_t> pids(2, -1);
  {
    runtime rt({.threads = 2, .context = {.backend = GetParam(), .quiet = true}});
    std::thread runner([&] {
      try {
        rt.run_on_each([&](io_context&, unsigned i) -> task<void> {
          process::spawn_options o;
          o.out = process::stdio::pipe;
          std::vector<std::string> argv{"sleep", "100"};
          auto c = process::spawn(argv, o);
          if (!c) co_return;
          pids[i] = c->id();
          started.fetch_add(1);
          (void)co_await c->wait();
        });
      } catch (...) {
      }
    });
    while (started.load() < 2) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms);
    rt.stop();
    runner.join();
  }
  for (pid_t p : pids) EXPECT_TRUE(p > 0 && reaped(p));
}

// A loop's signal_set for SIGCHLD and children waited on the same loop.
TEST_P(ProcessAttack, ASignalSetForSigchldDoesNotStealTheStatus) {
  run([]() -> task<void> {
    signal_set sigs{SIGCHLD};
    for (int i = 0; i < 5; ++i) {
      auto argv = sh("exit " + std::to_string(i));
      auto c = process::spawn(argv);
      EXPECT_TRUE(c);
      if (!c) co_return;
      auto st = co_await with_timeout(c->wait(), 10s);
      EXPECT_TRUE(st && st->code == i);
    }
    auto got = co_await with_timeout(sigs.wait(), 10s);
    EXPECT_TRUE(got && *got == SIGCHLD);
  }());
  sigset_t m;
  sigemptyset(&m);
  sigaddset(&m, SIGCHLD);
  ::pthread_sigmask(SIG_UNBLOCK, &m, nullptr);
  timespec zero{};
  while (::sigtimedwait(&m, nullptr, &zero) > 0) {
  }
}

// ---------------------------------------------------------------- spawn_blocking

std::atomic<int> alive{0};
struct counted {
  counted() noexcept { alive.fetch_add(1); }
  counted(const counted&) noexcept { alive.fetch_add(1); }
  counted(counted&&) noexcept { alive.fetch_add(1); }
  counted& operator=(const counted&) = delete;
  ~counted() { alive.fetch_sub(1); }
};

// An operation made and never awaited: its function never runs, its job is freed.
TEST_P(BlockingAttack, AnOperationNeverAwaitedNeverRunsAndIsFreed) {
  std::atomic<bool> ran{false};
  {
    auto fn = [c = counted{}, &ran] {
      ran = true;
      return 1;
    };
    auto op = spawn_blocking(std::move(fn));
    (void)op;
  }
  {
    blocking_pool pool;
    auto fn = [c = counted{}, &ran] {
      ran = true;
      return 1;
    };
    auto op = spawn_blocking(pool, std::move(fn));
    (void)op;
  }
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(alive.load(), 0);
}

struct throws_on_move {
  int v = 0;
  explicit throws_on_move(int x) : v(x) {}
  throws_on_move(const throws_on_move&) { throw std::runtime_error("copy"); }
  throws_on_move(throws_on_move&&) { throw std::runtime_error("move"); }
  throws_on_move& operator=(const throws_on_move&) = delete;
};

struct no_default {
  explicit no_default(int x) : v(x) {}
  int v;
};

// Results that throw when moved, results without a default constructor, exceptions
// that are not std::exception.
TEST_P(BlockingAttack, OddResultsAndExceptions) {
  run([]() -> task<void> {
    auto nd = [] { return no_default(7); };
    auto a = co_await spawn_blocking(nd);
    EXPECT_TRUE(a && a->v == 7);
    auto thrower = []() -> int { throw 42; };
    bool caught = false;
    try {
      (void)co_await spawn_blocking(thrower);
    } catch (int v) {
      caught = v == 42;
    }
    EXPECT_TRUE(caught);
    auto tm = [] { return throws_on_move(3); };
    bool move_threw = false;
    try {
      auto r = co_await spawn_blocking(tm);
      (void)r;
    } catch (const std::runtime_error&) {
      move_threw = true;  // a move that throws reaches the awaiting task
    }
    (void)move_threw;  // either outcome is fine, but the program must survive
  }());
}

// A function stopped while it runs and then throws: the exception is dropped safely;
// the frame is gone by then.
TEST_P(BlockingAttack, StoppedWhileRunningThenThrowsOrReturnsAfterTheFrameIsGone) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline";
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto finished = std::make_shared<std::atomic<int>>(0);
  blocking_pool pool({.threads = 2, .queue_limit = 8});
  run([](blocking_pool& pool, std::shared_ptr<std::atomic<bool>> release,
         std::shared_ptr<std::atomic<int>> finished) -> task<void> {
    auto throwing = [release, finished, c = counted{}]() -> std::string {
      while (!*release) std::this_thread::sleep_for(1ms);
      finished->fetch_add(1);
      throw std::runtime_error("late");
    };
    auto returning = [release, finished, c = counted{}]() {
      while (!*release) std::this_thread::sleep_for(1ms);
      finished->fetch_add(1);
      return std::make_unique<counted>();
    };
    auto a = co_await with_timeout(spawn_blocking(pool, std::move(throwing)), 20ms);
    EXPECT_EQ(a.error(), std::errc::timed_out);
    auto b = co_await with_timeout(spawn_blocking(pool, std::move(returning)), 20ms);
    EXPECT_EQ(b.error(), std::errc::timed_out);
  }(pool, release, finished));
  *release = true;
  // The loop is still alive: the values come back to it and are destroyed there.
  run([](std::shared_ptr<std::atomic<int>> finished) -> task<void> {
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (finished->load() < 2 && std::chrono::steady_clock::now() < until) (void)co_await sleep_for(1ms);
    (void)co_await sleep_for(20ms);
  }(finished));
  EXPECT_EQ(finished->load(), 2);
  while (pool.running() != 0) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(alive.load(), 0);
}

// A full queue refuses without running; once it drains, work is accepted again; a
// pool made with zeros is raised to one thread and one slot.
TEST_P(BlockingAttack, QueueFullAndZeroSizedPools) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline";
  blocking_pool pool({.threads = 0, .queue_limit = 0});
  EXPECT_EQ(pool.options().threads, 1u);
  EXPECT_EQ(pool.options().queue_limit, 1u);
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto ran = std::make_shared<std::atomic<int>>(0);
  std::thread watchdog([release] {  // a queued third call would otherwise wait forever
    for (int i = 0; i < 5000 && !*release; ++i) std::this_thread::sleep_for(1ms);
    *release = true;
  });
  run([](blocking_pool& pool, std::shared_ptr<std::atomic<bool>> release,
         std::shared_ptr<std::atomic<int>> ran) -> task<void> {
    std::vector<std::optional<result<int>>> out(3);
    scope s;
    for (int i = 0; i < 2; ++i) {
      s.spawn([](blocking_pool& pool, std::shared_ptr<std::atomic<bool>> release, std::shared_ptr<std::atomic<int>> ran,
                 std::optional<result<int>>& out) -> task<void> {
        auto fn = [release, ran] {
          ran->fetch_add(1);
          while (!*release) std::this_thread::sleep_for(1ms);
          return 1;
        };
        out = co_await spawn_blocking(pool, std::move(fn));
      }(pool, release, ran, out[i]));
      const auto until = std::chrono::steady_clock::now() + 10s;
      // The first one running, then the second one waiting in the queue.
      while ((i == 0 ? pool.running() < 1 : pool.queued() < 1) && std::chrono::steady_clock::now() < until)
        (void)co_await sleep_for(1ms);
    }
    auto third = [ran] {
      ran->fetch_add(100);
      return 3;
    };
    auto refused = co_await spawn_blocking(pool, std::move(third));
    EXPECT_FALSE(refused.has_value());
    if (!refused) {
      EXPECT_EQ(refused.error(), ringio::errc::queue_full);
    }
    *release = true;
    co_await s.join();
    EXPECT_TRUE(out[0] && out[0]->has_value());
    EXPECT_TRUE(out[1] && out[1]->has_value());
    auto again = [] { return 9; };
    auto r = co_await spawn_blocking(pool, again);
    EXPECT_TRUE(r && *r == 9);
  }(pool, release, ran));
  watchdog.join();
  EXPECT_EQ(ran->load(), 2);
}

// One pool serving four loops on four threads, each with many calls in flight.
TEST_P(BlockingAttack, ManyLoopsShareOnePool) {
  if (sim()) GTEST_SKIP() << "one simulated world per thread";
  blocking_pool pool({.threads = 3, .queue_limit = 100000});
  std::atomic<long> sum{0};
  std::atomic<int> wrong_loop{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      io_context ctx({.backend = GetParam(), .quiet = true});
      sync_wait(ctx,
                [](blocking_pool& pool, std::atomic<long>& sum, std::atomic<int>& wrong_loop, int t) -> task<void> {
                  const auto me = std::this_thread::get_id();
                  scope s;
                  for (int i = 0; i < 300; ++i) {
                    s.spawn([](blocking_pool& pool, std::atomic<long>& sum, std::atomic<int>& wrong_loop, int v,
                               std::thread::id me) -> task<void> {
                      auto fn = [v] { return v; };
                      auto r = co_await spawn_blocking(pool, fn);
                      if (std::this_thread::get_id() != me) wrong_loop.fetch_add(1);
                      if (r) sum.fetch_add(*r);
                    }(pool, sum, wrong_loop, t * 1000 + i, me));
                  }
                  co_await s.join();
                }(pool, sum, wrong_loop, t));
    });
  }
  for (auto& th : threads) th.join();
  long expected = 0;
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 300; ++i) expected += t * 1000 + i;
  EXPECT_EQ(sum.load(), expected);
  EXPECT_EQ(wrong_loop.load(), 0);
}

// shut_down() with work queued and running on the default pool: as a stop.
TEST_P(BlockingAttack, ShutDownWithWorkQueuedAndRunning) {
  if (sim()) GTEST_SKIP() << "sim runs the function inline";
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto started = std::make_shared<std::atomic<int>>(0);
  std::atomic<int> resumed{0};
  {
    io_context ctx({.backend = GetParam(), .quiet = true, .blocking = {.threads = 1, .queue_limit = 16}});
    for (int i = 0; i < 4; ++i)
      ctx.spawn([](std::shared_ptr<std::atomic<bool>> release, std::shared_ptr<std::atomic<int>> started,
                   std::atomic<int>& resumed) -> task<void> {
        auto fn = [release, started, c = counted{}] {
          started->fetch_add(1);
          while (!*release) std::this_thread::sleep_for(1ms);
          return std::string(1000, 'v');
        };
        auto r = co_await spawn_blocking(std::move(fn));
        EXPECT_FALSE(r.has_value());
        resumed.fetch_add(1);
      }(release, started, resumed));
    sync_wait(ctx, [](std::shared_ptr<std::atomic<int>> started) -> task<void> {
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (started->load() < 1 && std::chrono::steady_clock::now() < until) (void)co_await sleep_for(1ms);
    }(started));
    std::thread releaser([release] {
      std::this_thread::sleep_for(30ms);
      *release = true;
    });
    ctx.shut_down();
    releaser.join();
  }
  EXPECT_EQ(resumed.load(), 4);
  EXPECT_EQ(started->load(), 1);
  EXPECT_EQ(alive.load(), 0);
}

// The sim backend: the same seed gives the same interleaving of blocking work, sleeps
// and stops.
std::string sim_trace(std::uint64_t seed) {
  sim::world w(seed);
  io_context ctx({.backend = backend_kind::sim, .quiet = true});
  std::string trace;
  sync_wait(ctx, [](std::string& trace, std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    scope s;
    for (int i = 0; i < 30; ++i) {
      const auto delay = std::chrono::microseconds(rng() % 500);
      const auto deadline = std::chrono::microseconds(rng() % 500);
      s.spawn([](std::string& trace, int i, std::chrono::microseconds delay,
                 std::chrono::microseconds deadline) -> task<void> {
        (void)co_await sleep_for(delay);
        auto fn = [&trace, i] {
          trace += "r" + std::to_string(i) + " ";
          return i;
        };
        auto r = co_await with_timeout(spawn_blocking(fn), deadline);
        trace += (r ? "v" : "c") + std::to_string(i) + " ";
      }(trace, i, delay, deadline));
    }
    co_await s.join();
  }(trace, seed));
  return trace;
}

TEST(BlockingSimAttack, TheSameSeedGivesTheSameRun) {
  const std::uint64_t seed = test_seed();  // printed with its replay line
  const auto a = sim_trace(seed);
  const auto b = sim_trace(seed);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.empty());
}

RINGIO_ALL_BACKENDS_AND_SIM(WaitAttack);
RINGIO_ALL_BACKENDS(AdoptAttack);
RINGIO_ALL_BACKENDS_AND_SIM(ProcessAttack);
RINGIO_ALL_BACKENDS_AND_SIM(BlockingAttack);

}  // namespace
