// SPDX-License-Identifier: Apache-2.0
// The system-call hooks (ringio::fiber_hooks): plain blocking calls made inside fibers
// wait through the loop, keep the semantics C code relies on (errno, SO_RCVTIMEO,
// O_NONBLOCK, close, a stop), and are libc's own calls outside fibers. Built twice: with
// the hooks linked in (fiber_hooks_tests), and without them, run with
// LD_PRELOAD=libringio_fiber_hooks.so (fiber_hooks_preload_tests), with
// fiber_hooks_wait_test.cpp (select, ppoll, epoll_wait, getaddrinfo, close).
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fiber_hooks_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class FiberHooks : public fiber_hooks_test {};

TEST_P(FiberHooks, ReadAndWriteOnBlockingSocketsWaitThroughTheLoop) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  std::string got;
  int ticks = 0;
  run([](blocking_pair& p, std::string& got, int& ticks) -> task<void> {
    std::atomic<bool> running{true};
    scope s;
    s.spawn(ticker(running, ticks));
    spawn_fiber(
        s,
        [&] {
          char buf[64];
          for (;;) {
            const ssize_t n = ::read(p.b, buf, sizeof buf);  // blocks: the loop runs on
            if (n <= 0) break;
            got.append(buf, static_cast<std::size_t>(n));
          }
          running = false;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          for (int i = 0; i < 5; ++i) {
            ::usleep(5000);
            const std::string m = "m" + std::to_string(i);
            EXPECT_EQ(::write(p.a, m.data(), m.size()), static_cast<ssize_t>(m.size()));
          }
          ::shutdown(p.a, SHUT_WR);
        },
        small_stack);
    co_await s.join();
  }(p, got, ticks));
  EXPECT_EQ(got, "m0m1m2m3m4");
  EXPECT_GT(ticks, 0) << "the loop did not run while a fiber read";
}

TEST_P(FiberHooks, LargeWriteCompletesWhileThePeerReads) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  const std::size_t total = 4u << 20;  // far above the socket buffer
  std::size_t received = 0;
  ssize_t written = -1;
  run([](blocking_pair& p, std::size_t total, std::size_t& received, ssize_t& written) -> task<void> {
    scope s;
    spawn_fiber(
        s,
        [&] {
          std::string data(total, 'x');
          written = ::write(p.a, data.data(), data.size());
          ::shutdown(p.a, SHUT_WR);
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          char buf[16384];
          for (;;) {
            const ssize_t n = ::recv(p.b, buf, sizeof buf, 0);
            if (n <= 0) break;
            received += static_cast<std::size_t>(n);
          }
        },
        small_stack);
    co_await s.join();
  }(p, total, received, written));
  EXPECT_EQ(written, static_cast<ssize_t>(total)) << "a blocking write sends everything";
  EXPECT_EQ(received, total);
}

TEST_P(FiberHooks, VectoredWritesCompleteAndVectoredReadsFill) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  const std::size_t part = 1u << 20;  // three parts, far above the socket buffer
  ssize_t written = -1;
  std::size_t received = 0;
  bool in_order = true;
  run([](blocking_pair& p, std::size_t part, ssize_t& written, std::size_t& received, bool& in_order) -> task<void> {
    scope s;
    spawn_fiber(
        s,
        [&] {
          std::string x(part, 'a'), y(part, 'b'), z(part, 'c');
          iovec iov[3] = {{x.data(), x.size()}, {y.data(), y.size()}, {z.data(), z.size()}};
          written = ::writev(p.a, iov, 3);
          ::shutdown(p.a, SHUT_WR);
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          char one[7000], two[9000];
          for (;;) {
            iovec iov[2] = {{one, sizeof one}, {two, sizeof two}};
            const ssize_t n = ::readv(p.b, iov, 2);
            if (n <= 0) break;
            for (ssize_t i = 0; i < n; ++i) {
              const char c = i < static_cast<ssize_t>(sizeof one) ? one[i] : two[i - static_cast<ssize_t>(sizeof one)];
              const std::size_t at = received + static_cast<std::size_t>(i);
              if (c != "abc"[at / part]) in_order = false;
            }
            received += static_cast<std::size_t>(n);
          }
        },
        small_stack);
    co_await s.join();
  }(p, part, written, received, in_order));
  EXPECT_EQ(written, static_cast<ssize_t>(3 * part)) << "a blocking writev sends everything";
  EXPECT_EQ(received, 3 * part);
  EXPECT_TRUE(in_order);
}

TEST_P(FiberHooks, ReceiveTimeoutGivesEagainAfterTheDeadline) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  timeval tv{0, 50 * 1000};
  ASSERT_EQ(::setsockopt(p.b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  ssize_t r = 0;
  int err = 0;
  std::chrono::steady_clock::duration took{};
  int ticks = 0;
  run([](blocking_pair& p, ssize_t& r, int& err, auto& took, int& ticks) -> task<void> {
    std::atomic<bool> running{true};
    scope s;
    s.spawn(ticker(running, ticks));
    spawn_fiber(
        s,
        [&] {
          char c;
          const auto t0 = std::chrono::steady_clock::now();
          r = ::recv(p.b, &c, 1, 0);
          err = errno;
          took = std::chrono::steady_clock::now() - t0;
          running = false;
        },
        small_stack);
    co_await s.join();
  }(p, r, err, took, ticks));
  EXPECT_EQ(r, -1);
  EXPECT_TRUE(err == EAGAIN || err == EWOULDBLOCK) << std::strerror(err);
  EXPECT_GE(took, 45ms);
  EXPECT_GT(ticks, 0);
}

TEST_P(FiberHooks, ADescriptorTheProgramMadeNonBlockingGivesEagain) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  ASSERT_EQ(::fcntl(p.b, F_SETFL, ::fcntl(p.b, F_GETFL) | O_NONBLOCK), 0);
  ssize_t r = 0, rr = 0;
  int err = 0, err2 = 0;
  run([](blocking_pair& p, ssize_t& r, int& err, ssize_t& rr, int& err2) -> task<void> {
    co_await fiber(
        [&] {
          char c;
          r = ::recv(p.b, &c, 1, 0);
          err = errno;
          rr = ::read(p.b, &c, 1);
          err2 = errno;
        },
        small_stack);
  }(p, r, err, rr, err2));
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EAGAIN);
  EXPECT_EQ(rr, -1);
  EXPECT_EQ(err2, EAGAIN);
  EXPECT_NE(::fcntl(p.b, F_GETFL) & O_NONBLOCK, 0) << "the program's mode is kept";
}

TEST_P(FiberHooks, CloseOfADescriptorAnotherFiberWaitsOnFailsItsCallWithEbadf) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = 0;
  int err = 0;
  run([](blocking_pair& p, ssize_t& r, int& err) -> task<void> {
    scope s;
    spawn_fiber(
        s,
        [&] {
          char c;
          r = ::read(p.b, &c, 1);
          err = errno;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          ::usleep(10000);
          ::close(p.b);
          p.b = -1;
        },
        small_stack);
    co_await s.join();
  }(p, r, err));
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EBADF);
}

// Among many fibers each waiting on its own descriptor (and two on the same one), a
// close ends the waits on that descriptor only; the others go on and get their data.
TEST_P(FiberHooks, CloseEndsTheWaitsOnItsDescriptorOnlyAmongManyWaiters) {
  constexpr int pairs = 64;
  std::vector<blocking_pair> p(pairs);
  for (const auto& q : p) ASSERT_GE(q.a, 0);
  const int victim = 17;
  std::vector<ssize_t> r(pairs + 1, 0);
  std::vector<int> err(pairs + 1, 0);
  run([](std::vector<blocking_pair>& p, std::vector<ssize_t>& r, std::vector<int>& err) -> task<void> {
    scope s;
    for (int i = 0; i <= pairs; ++i) {
      const int k = i == pairs ? victim : i;  // the last fiber waits on the victim too
      spawn_fiber(
          s,
          [&, i, k] {
            char c = 0;
            r[static_cast<std::size_t>(i)] = ::read(p[static_cast<std::size_t>(k)].b, &c, 1);
            err[static_cast<std::size_t>(i)] = errno;
          },
          small_stack);
    }
    spawn_fiber(
        s,
        [&] {
          ::usleep(10000);
          ::close(p[victim].b);
          p[victim].b = -1;
          ::usleep(10000);
          for (int i = 0; i < pairs; ++i) {
            if (i != victim) {
              EXPECT_EQ(::write(p[static_cast<std::size_t>(i)].a, "x", 1), 1);
            }
          }
        },
        small_stack);
    co_await s.join();
  }(p, r, err));
  for (int i = 0; i <= pairs; ++i) {
    const bool closed = i == victim || i == pairs;
    EXPECT_EQ(r[static_cast<std::size_t>(i)], closed ? -1 : 1) << "fiber " << i;
    if (closed) {
      EXPECT_EQ(err[static_cast<std::size_t>(i)], EBADF) << "fiber " << i;
    }
  }
}

TEST_P(FiberHooks, AStopInterruptsTheCallWithEintrAndLaterWaitsWithEcanceled) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = 0, again = 0;
  int err = 0, err_again = 0, sleep_rc = 0, sleep_err = 0;
  run([](blocking_pair& p, ssize_t& r, int& err, ssize_t& again, int& err_again, int& sleep_rc,
         int& sleep_err) -> task<void> {
    scope s;
    spawn_fiber(
        s,
        [&] {
          char c;
          r = ::recv(p.b, &c, 1, 0);
          err = errno;
          again = ::recv(p.b, &c, 1, 0);
          err_again = errno;
          sleep_rc = ::usleep(100000);
          sleep_err = errno;
        },
        small_stack);
    (void)co_await sleep_for(10ms);
    s.request_stop();
    co_await s.join();
  }(p, r, err, again, err_again, sleep_rc, sleep_err));
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EINTR);
  EXPECT_EQ(again, -1);
  EXPECT_EQ(err_again, ECANCELED);
  EXPECT_EQ(sleep_rc, -1);
  EXPECT_EQ(sleep_err, ECANCELED);
}

TEST_P(FiberHooks, ConnectAcceptAndPollOverTcp) {
  const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(l, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l, 16), 0);
  ASSERT_EQ(::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::string reply;
  int poll_timeout_rc = -2, poll_ready_rc = -2;
  int ticks = 0;
  run([](int l, sockaddr_in a, std::string& reply, int& poll_timeout_rc, int& poll_ready_rc, int& ticks) -> task<void> {
    std::atomic<bool> running{true};
    scope s;
    s.spawn(ticker(running, ticks));
    spawn_fiber(
        s,
        [&] {
          const int c = ::accept(l, nullptr, nullptr);  // blocks: the loop runs on
          if (c < 0) return;
          pollfd pf{c, POLLIN, 0};
          poll_timeout_rc = ::poll(&pf, 1, 20);  // nothing yet: times out after 20 ms
          ::send(c, "ping", 4, 0);
          char buf[8];
          const ssize_t n = ::recv(c, buf, sizeof buf, 0);
          if (n > 0) ::send(c, buf, static_cast<std::size_t>(n), 0);
          ::close(c);
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          if (::connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
            ::close(c);
            return;
          }
          pollfd pf[2] = {{c, POLLIN, 0}, {c, POLLOUT, 0}};
          poll_ready_rc = ::poll(pf, 1, 5000);  // "ping" arrives after the peer's poll timed out
          char buf[8];
          const ssize_t n = ::recv(c, buf, 4, MSG_WAITALL);
          if (n > 0) ::send(c, buf, static_cast<std::size_t>(n), 0);
          char back[8];
          const ssize_t m = ::recv(c, back, sizeof back, MSG_WAITALL);  // 4 bytes, then the end
          if (m > 0) reply.assign(back, static_cast<std::size_t>(m));
          ::close(c);
          running = false;
        },
        small_stack);
    co_await s.join();
  }(l, a, reply, poll_timeout_rc, poll_ready_rc, ticks));
  ::close(l);
  EXPECT_EQ(reply, "ping");
  EXPECT_EQ(poll_timeout_rc, 0);
  EXPECT_EQ(poll_ready_rc, 1);
  EXPECT_GT(ticks, 0);
}

TEST_P(FiberHooks, PipesAndSleepsWaitThroughTheLoop) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::string got;
  int ticks = 0;
  run([](int* fds, std::string& got, int& ticks) -> task<void> {
    std::atomic<bool> running{true};
    scope s;
    s.spawn(ticker(running, ticks));
    spawn_fiber(
        s,
        [&] {
          char buf[16];
          const ssize_t n = ::read(fds[0], buf, sizeof buf);
          if (n > 0) got.assign(buf, static_cast<std::size_t>(n));
          running = false;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          timespec ts{0, 10 * 1000 * 1000};
          ::nanosleep(&ts, nullptr);
          ::clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
          ::write(fds[1], "pipe", 4);
        },
        small_stack);
    co_await s.join();
  }(fds, got, ticks));
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(got, "pipe");
  EXPECT_GT(ticks, 0) << "the loop ran during the 20 ms sleep";
  EXPECT_EQ(::fcntl(fds[0], F_GETFL), -1);
}

// Outside fibers the hooked names are libc's: a plain thread blocks in read until the
// other writes.
TEST(FiberHooksOutsideFibers, BlockingCallsOnPlainThreadsBehaveAsLibc) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  std::thread writer([&] {
    ::usleep(20000);
    ASSERT_EQ(::write(p.a, "abc", 3), 3);
  });
  char buf[8];
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(::read(p.b, buf, sizeof buf), 3);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 15ms) << "read blocked the thread";
  writer.join();
  timeval tv{0, 20 * 1000};
  ASSERT_EQ(::setsockopt(p.b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  errno = 0;
  EXPECT_EQ(::recv(p.b, buf, 1, 0), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(::sleep(0), 0u);
}

RINGIO_ALL_BACKENDS(FiberHooks);

}  // namespace
