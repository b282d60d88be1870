// SPDX-License-Identifier: Apache-2.0
// One armed multishot accept serving many connections; cancellation and destruction
// with connections still queued inside.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"
#include "support/sanitizer.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

int raw_connect(const socket_address& to) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(s, to.native(), to.size()), 0);
  return s;
}

class MultishotAccept : public backend_test {};

TEST_P(MultishotAccept, AcceptsManyConnections) {
  auto l = listen_loopback();
  auto at = address_of(l);
  std::vector<int> clients;
  for (int i = 0; i < 50; ++i) clients.push_back(raw_connect(at));
  auto n = run([](stream_listener& l) -> task<int> {
    multishot_acceptor acc(l);
    std::vector<stream_socket> held;
    for (int i = 0; i < 50; ++i) {
      auto s = co_await with_timeout(acc.next(), 5s);
      if (!s) {
        ADD_FAILURE() << "next: " << s.error().message();
        break;
      }
      held.push_back(std::move(*s));
    }
    co_return static_cast<int>(held.size());
  }(l));
  for (int c : clients) ::close(c);
  EXPECT_EQ(n, 50);
}

TEST_P(MultishotAccept, CancelledNextLosesNoConnection) {
  auto l = listen_loopback();
  auto at = address_of(l);
  auto got = run([](stream_listener& l, socket_address at) -> task<bool> {
    multishot_acceptor acc(l);
    std::stop_source src;
    auto stopper = [](std::stop_source& s) -> task<void> {
      co_await yield();
      s.request_stop();
    };
    auto [first, unused] = co_await when_all(acc.next().with_stop(src.get_token()), stopper(src));
    (void)unused;
    EXPECT_EQ(first.error(), std::errc::operation_canceled);
    int c = raw_connect(at);
    auto second = co_await with_timeout(acc.next(), 5s);
    ::close(c);
    co_return static_cast<bool>(second);
  }(l, at));
  EXPECT_TRUE(got);
}

TEST_P(MultishotAccept, DestroyingTheAcceptorClosesQueuedConnections) {
  auto l = listen_loopback();
  auto at = address_of(l);
  std::vector<int> clients;
  auto before = open_fd_count();
  run([](stream_listener& l, socket_address at, std::vector<int>& clients) -> task<void> {
    {
      multishot_acceptor acc(l);
      clients.push_back(raw_connect(at));
      auto first = co_await with_timeout(acc.next(), 5s);  // arms the request
      EXPECT_TRUE(first);
      for (int i = 0; i < 5; ++i) clients.push_back(raw_connect(at));
      auto slept = co_await sleep_for(50ms);  // the armed request accepts them meanwhile
      EXPECT_TRUE(slept);
    }  // destroyed with connections queued inside (io_uring) or still in the backlog
    auto settle = co_await sleep_for(20ms);  // the cancelled request's last CQE arrives
    EXPECT_TRUE(settle);
  }(l, at, clients));
  // Only the client ends remain open: nothing accepted on the server side leaked.
  EXPECT_EQ(open_fd_count(), before + clients.size());
  for (int c : clients) ::close(c);
}

TEST_P(MultishotAccept, NextTimesOutWhenNobodyConnects) {
  auto l = listen_loopback();
  auto t0 = std::chrono::steady_clock::now();
  auto r = run([](stream_listener& l) -> task<result<stream_socket>> {
    multishot_acceptor acc(l);
    co_return co_await with_timeout(acc.next(), 30ms);
  }(l));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::timed_out);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 29ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// An error that ends the multishot request (EMFILE) while the waiting next() has just
// been cancelled is kept for the next call, never dropped.
TEST_P(MultishotAccept, AnErrorRightAfterACancelledNextIsReportedByTheNextCall) {
  if (ringio_test::under_sanitizer)
    GTEST_SKIP() << "no free descriptor at all: the sanitizer runtime aborts without one of its own";
  auto l = listen_loopback();
  auto at = address_of(l);
  int client = raw_connect(at);  // waits in the backlog
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  // No room for one more descriptor: accepting fails with EMFILE.
  int lowest_free = 0;
  while (::fcntl(lowest_free, F_GETFD) >= 0) ++lowest_free;
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  struct outcome {
    std::error_code first, second, third;
  };
  auto o = run([](stream_listener& l, rlimit saved) -> task<outcome> {
    outcome o;
    multishot_acceptor acc(l);
    co_await yield();  // from here on, this task runs from the loop's ready queue
    std::stop_source stop;
    auto waiter = [](multishot_acceptor& acc, std::stop_token t) -> task<result<stream_socket>> {
      co_return co_await acc.next().with_stop(t);
    };
    auto stopper = [](std::stop_source& s) -> task<void> {
      // The next() above has armed the request but nothing was submitted yet; its
      // completion runs after the loop's next trip to the kernel, which reaps EMFILE.
      s.request_stop();
      co_return;
    };
    auto [first, unused] = co_await when_all(waiter(acc, stop.get_token()), stopper(stop));
    (void)unused;
    setrlimit(RLIMIT_NOFILE, &saved);
    auto code = [](const result<stream_socket>& r) { return r ? std::error_code{} : r.error(); };
    o.first = code(first);
    auto second = co_await with_timeout(acc.next(), 2s);
    o.second = code(second);
    if (!second) {
      auto third = co_await with_timeout(acc.next(), 2s);
      o.third = code(third);
    }
    co_return o;
  }(l, saved));
  setrlimit(RLIMIT_NOFILE, &saved);
  ::close(client);
  // Readiness backends try the accept at once (first: EMFILE); io_uring's first next()
  // is cancelled and the error comes with the second. Then the connection is accepted.
  if (o.first == std::errc::too_many_files_open) {
    EXPECT_FALSE(o.second) << o.second.message();
  } else {
    EXPECT_EQ(o.first, std::errc::operation_canceled) << o.first.message();
    EXPECT_EQ(o.second, std::errc::too_many_files_open) << "the EMFILE was lost: " << o.second.message();
    EXPECT_FALSE(o.third) << o.third.message();
  }
}

// stream_listener::cancel() ends a waiting next() with operation_canceled; the
// connection that comes later is accepted.
TEST_P(MultishotAccept, ListenerCancelEndsAWaitingNext) {
  auto l = listen_loopback();
  auto at = address_of(l);
  auto o = run([](stream_listener& l, socket_address at) -> task<std::pair<std::error_code, bool>> {
    multishot_acceptor acc(l);
    auto canceller = [](stream_listener& l) -> task<void> {
      auto slept = co_await sleep_for(20ms);  // the next() waits by now
      EXPECT_TRUE(slept);
      l.cancel();
    };
    auto [first, unused] = co_await when_all(with_timeout(acc.next(), 2s), canceller(l));
    (void)unused;
    int c = raw_connect(at);
    auto second = co_await with_timeout(acc.next(), 2s);
    ::close(c);
    co_return std::pair{first ? std::error_code{} : first.error(), static_cast<bool>(second)};
  }(l, at));
  EXPECT_EQ(o.first, std::errc::operation_canceled) << o.first.message();
  EXPECT_TRUE(o.second);
}

// The task that gets an error from next() may destroy the acceptor at once (an accept
// loop that gives up does): the request's end must not touch the freed state after.
TEST_P(MultishotAccept, TheAcceptorMayBeDestroyedAsSoonAsNextReportsAnError) {
  stream_listener none;  // no descriptor: the accept fails with EBADF
  auto err = run([](stream_listener& l) -> task<std::error_code> {
    auto acceptor = std::make_unique<multishot_acceptor>(l);
    auto s = co_await acceptor->next();
    acceptor.reset();  // inside the completion of the request that failed
    co_return s ? std::error_code{} : s.error();
  }(none));
  EXPECT_EQ(err, std::errc::bad_file_descriptor) << err.message();
}

RINGIO_ALL_BACKENDS(MultishotAccept);

}  // namespace
