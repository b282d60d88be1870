// One armed multishot accept serving many connections; cancellation and destruction
// with connections still queued inside.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"

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

RINGIO_ALL_BACKENDS(MultishotAccept);

}  // namespace
