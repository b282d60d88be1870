// SPDX-License-Identifier: Apache-2.0
// stream_socket::cancel() racing the completion of a multi-step operation's current
// step: a watchdog woken by a completion earlier in the same reaped batch cancels a
// recv_exact / send_all whose step completes right after it in that batch. The
// operation must end (the cancel cannot reach a next step submitted behind it).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/join_within.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class SameBatchCancel : public backend_test {};

void spin_for(std::chrono::milliseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

struct outcome {
  bool ended = false;     // every task finished by itself
  std::size_t got = 0;    // bytes recv_exact reported
  std::error_code error;  // its error, if it reported one
};

// The reader waits for 2,000 bytes on `data`; the watchdog waits for one byte on
// `trigger` and then cancels `data`. While the loop is held busy, the trigger byte and
// then 1,000 data bytes arrive, so both completions land in one batch, trigger first.
task<outcome> race_recv_exact(stream_socket& data, stream_socket& data_peer, stream_socket& trigger,
                              stream_socket& trigger_peer) {
  outcome out;
  std::array<std::byte, 2000> buf{};
  auto reader = [&]() -> task<void> {
    auto r = co_await data.recv_exact(buf);
    if (r) out.got = *r;
    else out.error = r.error();
  };
  auto watchdog = [&]() -> task<void> {
    std::array<std::byte, 1> one{};
    (void)co_await trigger.recv(one);
    data.cancel();
  };
  auto busy = [&]() -> task<void> {
    co_await yield();  // both waits are in the kernel now
    co_await yield();
    std::array<std::byte, 1000> bytes{};
    EXPECT_EQ(::send(trigger_peer.native_handle(), "t", 1, 0), 1);
    EXPECT_EQ(::send(data_peer.native_handle(), bytes.data(), bytes.size(), 0), 1000);
    spin_for(5ms);  // the loop is busy while both completions become ready
  };
  scope s;
  s.spawn(reader());
  s.spawn(watchdog());
  s.spawn(busy());
  out.ended = co_await join_within(s, 3s);
  co_return out;
}

TEST_P(SameBatchCancel, RecvExactCancelledInTheBatchOfItsStepEnds) {
  for (int round = 0; round < 20; ++round) {
    socket_pair d, t;
    outcome o = run(race_recv_exact(d.a, d.b, t.a, t.b));
    ASSERT_TRUE(o.ended) << "round " << round << ": recv_exact kept waiting after cancel()";
    // The cancel came before, between or after the receives of the 1,000 bytes: what
    // recv_exact did not report is still in the socket.
    if (o.got == 0) {
      EXPECT_EQ(o.error, std::errc::operation_canceled) << "round " << round;
    }
    std::array<char, 1000> rest{};
    const ssize_t left = ::recv(d.a.native_handle(), rest.data(), rest.size(), MSG_DONTWAIT);
    EXPECT_EQ(o.got + static_cast<std::size_t>(left > 0 ? left : 0), 1000u) << "round " << round;
  }
}

// The same race for send_all: the peer's reads free room for the next step at the
// moment the watchdog cancels.
TEST_P(SameBatchCancel, SendAllCancelledInTheBatchOfItsStepEnds) {
  for (int round = 0; round < 10; ++round) {
    socket_pair d, t;
    int sz = 4096;
    ASSERT_EQ(::setsockopt(d.a.native_handle(), SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz), 0);
    bool ended = false;
    std::size_t sent = 0;
    run([&]() -> task<void> {
      std::vector<std::byte> big(1 << 20);
      auto sender = [&]() -> task<void> {
        auto r = co_await d.a.send_all(big);
        sent = r ? *r : 0;
      };
      auto watchdog = [&]() -> task<void> {
        std::array<std::byte, 1> one{};
        (void)co_await t.a.recv(one);
        d.a.cancel();
      };
      auto busy = [&]() -> task<void> {
        (void)co_await sleep_for(20ms);  // the sender is blocked on a full buffer
        EXPECT_EQ(::send(t.b.native_handle(), "t", 1, 0), 1);
        std::vector<std::byte> sink(1 << 16);
        (void)::recv(d.b.native_handle(), sink.data(), sink.size(), MSG_DONTWAIT);
        spin_for(5ms);
      };
      scope s;
      s.spawn(sender());
      s.spawn(watchdog());
      s.spawn(busy());
      ended = co_await join_within(s, 3s);
    }());
    ASSERT_TRUE(ended) << "round " << round << ": send_all kept waiting after cancel()";
    EXPECT_LT(sent, std::size_t{1} << 20) << "round " << round;
  }
}

RINGIO_ALL_BACKENDS_AND_SIM(SameBatchCancel);

}  // namespace
