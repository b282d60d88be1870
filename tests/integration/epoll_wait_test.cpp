// SPDX-License-Identifier: Apache-2.0
// ringio::epoll_wait on an epoll set the test owns, on every backend (and on io_uring
// again without IORING_OP_EPOLL_WAIT, see tests/CMakeLists.txt): events come when a
// descriptor in the set becomes ready, at most as many as the span holds; deadlines and
// stops cancel the wait without taking events; a closed, wrong or reused descriptor.
#include "ringio/net/epoll_wait.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ringio/net/wait_ready.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class EpollWait : public backend_test {};

struct pipe_pair {
  int r = -1, w = -1;
  pipe_pair() {
    int p[2];
    if (::pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0) r = p[0], w = p[1];
  }
  ~pipe_pair() {
    for (int fd : {r, w})
      if (fd >= 0) ::close(fd);
  }
};

// An epoll set of the test's own, as a C library would bring it.
struct epoll_set {
  int fd = ::epoll_create1(EPOLL_CLOEXEC);
  ~epoll_set() { close(); }
  void close() {
    if (fd < 0) return;
    forget_descriptor(fd);
    ::close(fd);
    fd = -1;
  }
  bool add(int watched, std::uint64_t tag, std::uint32_t events = EPOLLIN) const {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return ::epoll_ctl(fd, EPOLL_CTL_ADD, watched, &ev) == 0;
  }
};

// epoll_event is packed on x86-64: copy its fields out before gtest binds references.
std::uint64_t tag_of(const epoll_event& e) { return e.data.u64; }
std::uint32_t events_of(const epoll_event& e) { return e.events; }

void put(int w) { ASSERT_EQ(::write(w, "x", 1), 1); }

TEST_P(EpollWait, TakesTheReadyEventsOnceThereAreAny) {
  epoll_set ep;
  pipe_pair a, b;
  ASSERT_GE(ep.fd, 0);
  ASSERT_TRUE(ep.add(a.r, 1) && ep.add(b.r, 2));
  run([](int ep, int aw, int bw) -> task<void> {
    std::array<epoll_event, 4> ev{};
    scope s;
    s.spawn([](int aw) -> task<void> {
      (void)co_await sleep_for(5ms);
      put(aw);
    }(aw));
    auto n = co_await with_timeout(epoll_wait(ep, ev), 10s);
    co_await s.join();
    if (!n) {
      ADD_FAILURE() << n.error().message();
      co_return;
    }
    EXPECT_EQ(*n, 1u);
    EXPECT_EQ(tag_of(ev[0]), 1u);
    EXPECT_NE(events_of(ev[0]) & EPOLLIN, 0u);
    // Level-triggered and not read: ready again at once, now with the second pipe too.
    put(bw);
    n = co_await with_timeout(epoll_wait(ep, ev), 10s);
    if (!n) {
      ADD_FAILURE() << n.error().message();
      co_return;
    }
    EXPECT_EQ(*n, 2u);
    // A span of one takes one.
    n = co_await with_timeout(epoll_wait(ep, std::span(ev).first(1)), 10s);
    if (!n) {
      ADD_FAILURE() << n.error().message();
      co_return;
    }
    EXPECT_EQ(*n, 1u);
  }(ep.fd, a.w, b.w));
}

TEST_P(EpollWait, EdgeTriggeredEventsAreTakenOnce) {
  epoll_set ep;
  pipe_pair a;
  ASSERT_TRUE(ep.add(a.r, 7, EPOLLIN | EPOLLET));
  put(a.w);
  run([](int ep, int aw) -> task<void> {
    std::array<epoll_event, 4> ev{};
    auto n = co_await with_timeout(epoll_wait(ep, ev), 10s);
    if (!n) {
      ADD_FAILURE() << n.error().message();
      co_return;
    }
    EXPECT_EQ(*n, 1u);
    EXPECT_EQ(tag_of(ev[0]), 7u);
    // Taken: nothing more until the next edge.
    auto none = co_await with_timeout(epoll_wait(ep, ev), 20ms);
    EXPECT_EQ(none.error(), std::errc::timed_out);
    put(aw);
    n = co_await with_timeout(epoll_wait(ep, ev), 10s);
    if (!n) {
      ADD_FAILURE() << n.error().message();
      co_return;
    }
    EXPECT_EQ(tag_of(ev[0]), 7u);
  }(ep.fd, a.w));
}

TEST_P(EpollWait, DeadlinesAndStopsCancelTheWaitAndTakeNothing) {
  epoll_set ep;
  pipe_pair a;
  ASSERT_TRUE(ep.add(a.r, 3, EPOLLIN | EPOLLET));
  run([](int ep, int aw) -> task<void> {
    std::array<epoll_event, 4> ev{};
    auto timed = co_await with_timeout(epoll_wait(ep, ev), 20ms);
    EXPECT_EQ(timed.error(), std::errc::timed_out);
    std::stop_source stop;
    scope s;
    s.spawn([](std::stop_source& stop) -> task<void> {
      (void)co_await sleep_for(5ms);
      stop.request_stop();
    }(stop));
    auto stopped = co_await epoll_wait(ep, ev).with_stop(stop.get_token());
    EXPECT_EQ(stopped.error(), std::errc::operation_canceled);
    co_await s.join();
    // Stopped before it started: cancelled, nothing taken.
    std::stop_source already;
    already.request_stop();
    put(aw);
    auto early = co_await epoll_wait(ep, ev).with_stop(already.get_token());
    EXPECT_EQ(early.error(), std::errc::operation_canceled);
    // The edge is still there for the next wait.
    auto n = co_await with_timeout(epoll_wait(ep, ev), 10s);
    if (!n) {
      ADD_FAILURE() << n.error().message();
      co_return;
    }
    EXPECT_EQ(tag_of(ev[0]), 3u);
  }(ep.fd, a.w));
}

TEST_P(EpollWait, ClosedWrongAndEmpty) {
  pipe_pair a;
  run([](int not_epoll) -> task<void> {
    std::array<epoll_event, 2> ev{};
    epoll_set closed;
    const int stale = closed.fd;
    closed.close();
    auto bad = co_await with_timeout(epoll_wait(stale, ev), 10s);
    EXPECT_EQ(bad.error(), std::errc::bad_file_descriptor);
    auto wrong = co_await with_timeout(epoll_wait(not_epoll, ev), 10s);
    EXPECT_EQ(wrong.error(), std::errc::invalid_argument);
    epoll_set ep;
    auto empty = co_await with_timeout(epoll_wait(ep.fd, std::span<epoll_event>()), 10s);
    EXPECT_EQ(empty.error(), std::errc::invalid_argument);
  }(a.r));
}

// A wait timed out, its epoll descriptor closed and (usually) the number reused by a
// new set: the new set's events come.
TEST_P(EpollWait, ClosedAfterAWaitAndTheNumberReused) {
  pipe_pair a, b;
  epoll_set first;
  ASSERT_TRUE(first.add(a.r, 1));
  run([](epoll_set& first, int aw, int br, int bw) -> task<void> {
    std::array<epoll_event, 2> ev{};
    auto timed = co_await with_timeout(epoll_wait(first.fd, ev), 10ms);
    EXPECT_EQ(timed.error(), std::errc::timed_out);
    first.close();
    epoll_set second;
    EXPECT_TRUE(second.add(br, 9));
    put(aw);  // the closed set's pipe: nothing to anyone
    put(bw);
    auto n = co_await with_timeout(epoll_wait(second.fd, ev), 10s);
    if (!n) {
      ADD_FAILURE() << n.error().message();
      co_return;
    }
    EXPECT_EQ(*n, 1u);
    EXPECT_EQ(tag_of(ev[0]), 9u);
  }(first, a.w, b.r, b.w));
}

TEST_P(EpollWait, UsesTheOpcodeWhereTheKernelHasIt) {
  if (GetParam() != backend_kind::uring) GTEST_SKIP() << "only the io_uring completion backend has a choice";
  io_uring ring;
  ASSERT_EQ(io_uring_queue_init(2, &ring, 0), 0);
  io_uring_probe* probe = io_uring_get_probe_ring(&ring);
  const bool has = probe != nullptr && io_uring_opcode_supported(probe, 59) != 0;  // IORING_OP_EPOLL_WAIT
  io_uring_free_probe(probe);
  io_uring_queue_exit(&ring);
  const char* hidden = std::getenv("RINGIO_URING_HIDE_OPCODES");
  const bool hiding = hidden != nullptr && std::string(hidden).find("59") != std::string::npos;
  const std::string d = ctx().describe();
  EXPECT_NE(d.find(has && !hiding ? "epoll wait op" : "epoll wait by readiness"), std::string::npos) << d;
}

RINGIO_ALL_BACKENDS_AND_SIM(EpollWait);

}  // namespace
