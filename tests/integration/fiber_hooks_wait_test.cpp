// SPDX-License-Identifier: Apache-2.0
// The hooks of the calls that wait for several things at once (select, pselect, ppoll,
// epoll_wait and its variants), of getaddrinfo (run on the loop's blocking pool), the
// wake-up of such waits by a close() of one of their descriptors, the O_NONBLOCK rule
// under dup(2) and FIONBIO, and the same calls outside fibers, where they are libc's.
// Part of fiber_hooks_tests (linked) and fiber_hooks_preload_tests (preloaded).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "../../src/fiber/hook_bridge.hpp"
#include "fiber_hooks_support.hpp"
#include "ringio/blocking/blocking_pool.hpp"
#include "ringio/blocking/spawn_blocking.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

class FiberHooksWaits : public fiber_hooks_test {};

TEST_P(FiberHooksWaits, SelectWaitsThroughTheLoopAndKeepsItsTimeout) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  int timed_out_rc = -2, ready_rc = -2, empty_rc = -2, pselect_rc = -2;
  bool cleared = false, ready_set = false, pselect_set = false;
  timeval timed_out_left{9, 9}, ready_left{};
  clock_type::duration timed_out_took{}, empty_took{};
  int ticks = 0;
  run([&]() -> task<void> {
    std::atomic<bool> running{true};
    scope s;
    s.spawn(ticker(running, ticks));
    spawn_fiber(
        s,
        [&] {
          fd_set r;
          FD_ZERO(&r);
          FD_SET(p.b, &r);
          timed_out_left = {0, 20 * 1000};
          auto t0 = clock_type::now();
          timed_out_rc = ::select(p.b + 1, &r, nullptr, nullptr, &timed_out_left);  // nothing comes
          timed_out_took = clock_type::now() - t0;
          cleared = !FD_ISSET(p.b, &r);
          FD_SET(p.b, &r);
          ready_left = {5, 0};
          ready_rc = ::select(p.b + 1, &r, nullptr, nullptr, &ready_left);  // the peer writes
          ready_set = FD_ISSET(p.b, &r);
          timeval ten_ms{0, 10 * 1000};
          t0 = clock_type::now();
          empty_rc = ::select(0, nullptr, nullptr, nullptr, &ten_ms);  // a sleep
          empty_took = clock_type::now() - t0;
          char c;
          (void)::read(p.b, &c, 1);
          FD_SET(p.b, &r);
          const timespec five{5, 0};
          pselect_rc = ::pselect(p.b + 1, &r, nullptr, nullptr, &five, nullptr);
          pselect_set = FD_ISSET(p.b, &r);
          running = false;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          ::usleep(40000);
          (void)::write(p.a, "x", 1);
          ::usleep(30000);
          (void)::write(p.a, "y", 1);
        },
        small_stack);
    co_await s.join();
  }());
  EXPECT_EQ(timed_out_rc, 0);
  EXPECT_GE(timed_out_took, 15ms);
  EXPECT_TRUE(cleared) << "a select that timed out clears the sets";
  EXPECT_EQ(timed_out_left.tv_sec, 0);
  EXPECT_EQ(timed_out_left.tv_usec, 0) << "Linux leaves the time not slept in the timeval";
  EXPECT_EQ(ready_rc, 1);
  EXPECT_TRUE(ready_set);
  EXPECT_LT(ready_left.tv_sec, 5);
  EXPECT_GE(ready_left.tv_sec, 1);
  EXPECT_EQ(empty_rc, 0);
  EXPECT_GE(empty_took, 8ms);
  EXPECT_EQ(pselect_rc, 1);
  EXPECT_TRUE(pselect_set);
  EXPECT_GT(ticks, 0) << "the loop did not run while a fiber selected";
}

// libcurl's way: non-blocking sockets and a ppoll/poll of several descriptors.
TEST_P(FiberHooksWaits, PpollOfNonBlockingSocketsSuspendsTheFiber) {
  blocking_pair p, q;
  ASSERT_GE(p.a, 0);
  ASSERT_GE(q.a, 0);
  for (int fd : {p.b, q.b}) ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  int rc = -2, poll_rc = -2;
  short p_revents = -1, q_revents = -1;
  int ticks = 0;
  run([&]() -> task<void> {
    std::atomic<bool> running{true};
    scope s;
    s.spawn(ticker(running, ticks));
    spawn_fiber(
        s,
        [&] {
          pollfd fds[2] = {{p.b, POLLIN, 0}, {q.b, POLLIN, 0}};
          const timespec five{5, 0};
          rc = ::ppoll(fds, 2, &five, nullptr);
          p_revents = fds[0].revents;
          q_revents = fds[1].revents;
          char c;
          (void)::recv(q.b, &c, 1, 0);
          pollfd both[2] = {{p.b, POLLIN, 0}, {q.b, POLLIN, 0}};
          poll_rc = ::poll(both, 2, 20);  // nothing: times out
          running = false;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          ::usleep(20000);
          (void)::send(q.a, "x", 1, 0);
        },
        small_stack);
    co_await s.join();
  }());
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(p_revents, 0);
  EXPECT_EQ(q_revents, POLLIN);
  EXPECT_EQ(poll_rc, 0);
  EXPECT_GT(ticks, 0);
}

TEST_P(FiberHooksWaits, EpollWaitWaitsUntilTheInstanceIsReadable) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = p.b;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, p.b, &ev), 0);
  int timed_out_rc = -2, ready_rc = -2, pwait_rc = -2, pwait2_rc = -2;
  int ready_fd = -1;
  clock_type::duration took{};
  int ticks = 0;
  run([&]() -> task<void> {
    std::atomic<bool> running{true};
    scope s;
    s.spawn(ticker(running, ticks));
    spawn_fiber(
        s,
        [&] {
          epoll_event out[4];
          const auto t0 = clock_type::now();
          timed_out_rc = ::epoll_wait(ep, out, 4, 20);
          took = clock_type::now() - t0;
          ready_rc = ::epoll_wait(ep, out, 4, -1);  // the peer writes
          if (ready_rc == 1) ready_fd = out[0].data.fd;
          char c;
          (void)::read(p.b, &c, 1);
          pwait_rc = ::epoll_pwait(ep, out, 4, 5000, nullptr);
          (void)::read(p.b, &c, 1);
          const timespec five{5, 0};
          pwait2_rc = ::epoll_pwait2(ep, out, 4, &five, nullptr);
          running = false;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          for (int i = 0; i < 3; ++i) {
            ::usleep(30000);
            (void)::write(p.a, "x", 1);
          }
        },
        small_stack);
    co_await s.join();
  }());
  ::close(ep);
  EXPECT_EQ(timed_out_rc, 0);
  EXPECT_GE(took, 15ms);
  EXPECT_EQ(ready_rc, 1);
  EXPECT_EQ(ready_fd, p.b);
  EXPECT_EQ(pwait_rc, 1);
  if (pwait2_rc == -1 && errno == ENOSYS) GTEST_SKIP() << "epoll_pwait2: the kernel lacks it";
  EXPECT_EQ(pwait2_rc, 1);
  EXPECT_GT(ticks, 0);
}

// A close() on the loop's thread wakes every wait of that descriptor: poll reports
// POLLNVAL, select and epoll_wait (of a closed epoll instance) fail with EBADF.
TEST_P(FiberHooksWaits, CloseWakesPollSelectAndEpollWaitsOnTheDescriptor) {
  blocking_pair p, q, r, t;
  ASSERT_GE(p.a, 0);
  ASSERT_GE(q.a, 0);
  ASSERT_GE(r.a, 0);
  ASSERT_GE(t.a, 0);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, t.b, &ev), 0);
  int poll_rc = -2, select_rc = -2, select_err = 0, epoll_rc = -2, epoll_err = 0;
  short closed_revents = 0, open_revents = -1;
  const int closed_poll_fd = q.b;
  run([&]() -> task<void> {
    scope s;
    spawn_fiber(
        s,
        [&] {
          pollfd fds[2] = {{p.b, POLLIN, 0}, {q.b, POLLIN, 0}};
          poll_rc = ::poll(fds, 2, -1);
          open_revents = fds[0].revents;
          closed_revents = fds[1].revents;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          fd_set rs;
          FD_ZERO(&rs);
          FD_SET(p.b, &rs);
          FD_SET(r.b, &rs);
          select_rc = ::select(std::max(p.b, r.b) + 1, &rs, nullptr, nullptr, nullptr);
          select_err = errno;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          epoll_event out[2];
          epoll_rc = ::epoll_wait(ep, out, 2, -1);
          epoll_err = errno;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          ::usleep(20000);
          ::close(q.b);
          q.b = -1;
          ::close(r.b);
          r.b = -1;
          ::close(ep);
        },
        small_stack);
    co_await s.join();
  }());
  EXPECT_EQ(poll_rc, 1);
  EXPECT_EQ(closed_revents, POLLNVAL) << "descriptor " << closed_poll_fd;
  EXPECT_EQ(open_revents, 0);
  EXPECT_EQ(select_rc, -1);
  EXPECT_EQ(select_err, EBADF);
  EXPECT_EQ(epoll_rc, -1);
  EXPECT_EQ(epoll_err, EBADF);
}

// Whether the program made a descriptor non-blocking is read from the open file at
// the moment it matters (F_GETFL), never cached: O_NONBLOCK set through a duplicate
// or with FIONBIO counts, and so does clearing it again.
TEST_P(FiberHooksWaits, NonBlockingModeIsReadFromTheOpenFileEveryTime) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  const int dup_fd = ::dup(p.b);
  ASSERT_GE(dup_fd, 0);
  int on = 1;
  ASSERT_EQ(::ioctl(dup_fd, FIONBIO, &on), 0);
  ssize_t r1 = 0, r2 = 0, r3 = 0;
  int e1 = 0, e2 = 0;
  int ticks = 0;
  run([&]() -> task<void> {
    std::atomic<bool> running{true};
    scope s;
    s.spawn(ticker(running, ticks));
    spawn_fiber(
        s,
        [&] {
          char c;
          r1 = ::read(p.b, &c, 1);  // the duplicate made the open file non-blocking
          e1 = errno;
          r2 = ::recv(p.b, &c, 1, 0);
          e2 = errno;
          int off = 0;
          ::ioctl(dup_fd, FIONBIO, &off);
          r3 = ::read(p.b, &c, 1);  // blocking again: waits for the peer
          running = false;
        },
        small_stack);
    spawn_fiber(
        s,
        [&] {
          ::usleep(20000);
          (void)::write(p.a, "x", 1);
        },
        small_stack);
    co_await s.join();
  }());
  ::close(dup_fd);
  EXPECT_EQ(r1, -1);
  EXPECT_EQ(e1, EAGAIN);
  EXPECT_EQ(r2, -1);
  EXPECT_EQ(e2, EAGAIN);
  EXPECT_EQ(r3, 1);
  EXPECT_GT(ticks, 0);
}

RINGIO_ALL_BACKENDS(FiberHooksWaits);

// ---- getaddrinfo ----

using getaddrinfo_fn = int (*)(const char*, const char*, const addrinfo*, addrinfo**);

// libc's own getaddrinfo, whatever the program defines or preloads.
getaddrinfo_fn libc_getaddrinfo() {
  void* libc = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  return libc != nullptr ? reinterpret_cast<getaddrinfo_fn>(::dlsym(libc, "getaddrinfo")) : nullptr;
}

std::string first_address(const addrinfo* ai) {
  if (ai == nullptr || ai->ai_family != AF_INET) return "";
  const auto* in = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
}

class FiberHooksLookup : public fiber_hooks_test {
 protected:
  // Keeps every thread of the loop's default blocking pool busy for `d`: a lookup
  // spawned meanwhile waits in the pool's queue.
  void occupy_pool(scope& s, std::chrono::milliseconds d) {
    const unsigned n = blocking_pool::default_of(ctx()).options().threads;
    for (unsigned i = 0; i < n; ++i)
      s.spawn([](std::chrono::milliseconds d) -> task<void> {
        auto slept = co_await spawn_blocking([d] { std::this_thread::sleep_for(d); });
        (void)slept;
      }(d));
  }
};

TEST_P(FiberHooksLookup, GetaddrinfoRunsOnThePoolWhileTheLoopRuns) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* expected = nullptr;
  const getaddrinfo_fn libc = libc_getaddrinfo();
  ASSERT_NE(libc, nullptr);
  ASSERT_EQ(libc("localhost", "80", &hints, &expected), 0);
  const std::string want = first_address(expected);
  ::freeaddrinfo(expected);
  int rc = -1, numeric_rc = -1;
  std::string got, numeric;
  clock_type::duration took{};
  int ticks = 0;
  // The loop ticks every 1 ms while the lookup waits 100 ms for the pool: a host that
  // does not run the test for most of that leaves few ticks, so a round with 20 or fewer
  // runs again (three at most); a loop blocked by the lookup fails every round.
  for (int round = 0; round < 3 && ticks <= 20; ++round) {
    ticks = 0;
    run([&]() -> task<void> {
      std::atomic<bool> running{true};
      scope s;
      s.spawn(ticker(running, ticks));
      occupy_pool(s, 100ms);
      spawn_fiber(
          s,
          [&] {
            addrinfo* res = nullptr;
            const auto t0 = clock_type::now();
            rc = ::getaddrinfo("localhost", "80", &hints, &res);  // waits for a pool thread
            took = clock_type::now() - t0;
            if (rc == 0) got = first_address(res);
            ::freeaddrinfo(res);  // libc's own result, freed by libc
            res = nullptr;
            numeric_rc = ::getaddrinfo("127.0.0.1", "8080", &hints, &res);  // parsed in place
            if (numeric_rc == 0) numeric = first_address(res);
            ::freeaddrinfo(res);
            running = false;
          },
          fiber_options{.stack_size = 256 * 1024});
      co_await s.join();
    }());
  }
  EXPECT_EQ(rc, 0) << ::gai_strerror(rc);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got, "127.0.0.1:80");
  EXPECT_GE(took, 50ms) << "the lookup did not wait for the busy pool";
  EXPECT_GT(ticks, 20) << "the loop did not run while the fiber waited for its lookup";
  EXPECT_EQ(numeric_rc, 0);
  EXPECT_EQ(numeric, "127.0.0.1:8080");
}

TEST_P(FiberHooksLookup, AStopGivesEaiSystemWithEintrThenEcanceled) {
  int rc = 0, err = 0, again_rc = 0, again_err = 0;
  run([&]() -> task<void> {
    scope pool_users;
    occupy_pool(pool_users, 200ms);
    scope s;
    spawn_fiber(
        s,
        [&] {
          addrinfo* res = nullptr;
          rc = ::getaddrinfo("localhost", "80", nullptr, &res);  // queued behind the sleepers
          err = errno;
          again_rc = ::getaddrinfo("localhost", "80", nullptr, &res);
          again_err = errno;
        },
        fiber_options{.stack_size = 256 * 1024});
    (void)co_await sleep_for(20ms);
    s.request_stop();
    co_await s.join();
    co_await pool_users.join();
  }());
  EXPECT_EQ(rc, EAI_SYSTEM) << ::gai_strerror(rc);
  EXPECT_EQ(err, EINTR);
  EXPECT_EQ(again_rc, EAI_SYSTEM);
  EXPECT_EQ(again_err, ECANCELED);
}

// The bridge's run_blocking, which getaddrinfo uses: when the fiber is stopped while
// the function runs, the call returns at once with -EINTR, and the argument goes to
// `discard` once the function has finished (on the loop, when the abandoned result
// comes back), exactly once.
struct blocking_arg {
  std::atomic<bool> finished{false};
  std::atomic<int> discarded{0};
  std::atomic<bool> finished_before_discard{false};
};

TEST_P(FiberHooksLookup, RunBlockingDiscardsTheArgumentOnceTheStoppedWorkEnds) {
  const ringio_fiber_hook_bridge* bridge = ringio_fiber_hook_bridge_get();
  ASSERT_NE(bridge, nullptr);
  auto* arg = new blocking_arg;
  int rc = 0;
  bool finished_at_return = true;
  run([&]() -> task<void> {
    scope s;
    spawn_fiber(
        s,
        [&] {
          rc = bridge->run_blocking(
              [](void* p) {
                std::this_thread::sleep_for(300ms);
                static_cast<blocking_arg*>(p)->finished = true;
              },
              [](void* p) {
                auto* a = static_cast<blocking_arg*>(p);
                a->finished_before_discard = a->finished.load();
                ++a->discarded;
              },
              arg);
          finished_at_return = arg->finished.load();
        },
        small_stack);
    (void)co_await sleep_for(20ms);
    s.request_stop();
    co_await s.join();
  }());
  EXPECT_EQ(rc, -EINTR);
  EXPECT_FALSE(finished_at_return) << "the stopped fiber waited for the work";
  // The abandoned result comes back to the loop, which discards it: run the loop.
  run([&]() -> task<void> {
    const auto until = clock_type::now() + 10s;
    while (arg->discarded.load() == 0 && clock_type::now() < until) (void)co_await sleep_for(1ms);
  }());
  EXPECT_EQ(arg->discarded.load(), 1);
  EXPECT_TRUE(arg->finished_before_discard.load());
  delete arg;
}

RINGIO_ALL_BACKENDS(FiberHooksLookup);

// ---- outside fibers: libc's calls ----

TEST(FiberHooksOutsideFibers, SelectPpollEpollAndGetaddrinfoOnPlainThreadsAreLibcs) {
  blocking_pair p;
  ASSERT_GE(p.a, 0);
  // Each blocks the thread for its whole timeout, as libc's does.
  fd_set r;
  FD_ZERO(&r);
  FD_SET(p.b, &r);
  timeval tv{0, 20 * 1000};
  auto t0 = clock_type::now();
  EXPECT_EQ(::select(p.b + 1, &r, nullptr, nullptr, &tv), 0);
  EXPECT_GE(clock_type::now() - t0, 15ms);
  EXPECT_EQ(tv.tv_sec, 0);
  EXPECT_EQ(tv.tv_usec, 0);
  FD_SET(p.b, &r);
  const timespec twenty_ms{0, 20 * 1000 * 1000};
  t0 = clock_type::now();
  EXPECT_EQ(::pselect(p.b + 1, &r, nullptr, nullptr, &twenty_ms, nullptr), 0);
  EXPECT_GE(clock_type::now() - t0, 15ms);
  pollfd pf[2] = {{p.b, POLLIN, 0}, {p.a, POLLIN, 0}};
  t0 = clock_type::now();
  EXPECT_EQ(::ppoll(pf, 2, &twenty_ms, nullptr), 0);
  EXPECT_GE(clock_type::now() - t0, 15ms);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, p.b, &ev), 0);
  epoll_event out[2];
  t0 = clock_type::now();
  EXPECT_EQ(::epoll_wait(ep, out, 2, 20), 0);
  EXPECT_GE(clock_type::now() - t0, 15ms);
  EXPECT_EQ(::epoll_pwait(ep, out, 2, 1, nullptr), 0);
  // Ready: the same answers as in a fiber.
  ASSERT_EQ(::write(p.a, "x", 1), 1);
  EXPECT_EQ(::epoll_wait(ep, out, 2, -1), 1);
  FD_SET(p.b, &r);
  EXPECT_EQ(::select(p.b + 1, &r, nullptr, nullptr, nullptr), 1);
  ::close(ep);
  // getaddrinfo: libc's result, on this thread.
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* mine = nullptr;
  addrinfo* theirs = nullptr;
  ASSERT_EQ(::getaddrinfo("localhost", "80", &hints, &mine), 0);
  const getaddrinfo_fn libc = libc_getaddrinfo();
  ASSERT_NE(libc, nullptr);
  ASSERT_EQ(libc("localhost", "80", &hints, &theirs), 0);
  EXPECT_EQ(first_address(mine), first_address(theirs));
  ::freeaddrinfo(mine);
  ::freeaddrinfo(theirs);
  EXPECT_EQ(::getaddrinfo("no such host", nullptr, &hints, &mine), libc("no such host", nullptr, &hints, &theirs));
}

}  // namespace
