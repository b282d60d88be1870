// SPDX-License-Identifier: Apache-2.0
// Adversarial: stream_socket::cancel() racing the completion of the current step of
// multi-step operations not covered by same_batch_cancel_test: gather send_all,
// send_file, buffered_stream reads, multishot_receiver; and operations started right
// after cancel() (same loop iteration) must not be affected.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "ringio/net/buffered_stream.hpp"
#include "ringio/net/copy_bidirectional.hpp"
#include "ringio/net/send_file.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/join_within.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class AdversarialCancel : public backend_test {};

void spin_for(std::chrono::milliseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Generic race: `op` runs on d.a; the watchdog waits one byte on t.a then cancels d.a;
// `poke` makes the current step of op complete. trigger_first chooses the order.
template <class Op, class Poke>
bool race(socket_pair& d, socket_pair& t, Op op, Poke poke, bool trigger_first, io_context& ctx) {
  bool ended = false;
  sync_wait(ctx, [&]() -> task<void> {
    auto watchdog = [&]() -> task<void> {
      std::array<std::byte, 1> one{};
      (void)co_await t.a.recv(one);
      d.a.cancel();
    };
    auto busy = [&]() -> task<void> {
      (void)(void)co_await sleep_for(20ms);
      if (trigger_first) {
        EXPECT_EQ(::send(t.b.native_handle(), "t", 1, 0), 1);
      }
      poke();
      if (!trigger_first) {
        EXPECT_EQ(::send(t.b.native_handle(), "t", 1, 0), 1);
      }
      spin_for(5ms);
    };
    scope s;
    s.spawn(op());
    s.spawn(watchdog());
    s.spawn(busy());
    ended = co_await join_within(s, 3s);
  }());
  return ended;
}

TEST_P(AdversarialCancel, GatherSendAllCancelledInTheBatchOfItsStepEnds) {
  for (int round = 0; round < 10; ++round) {
    socket_pair d, t;
    int sz = 4096;
    ASSERT_EQ(::setsockopt(d.a.native_handle(), SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz), 0);
    std::vector<std::byte> big(1 << 20);
    std::vector<const_buffer> bufs;
    for (int i = 0; i < 64; ++i) bufs.push_back(const_buffer(big.data() + i * (big.size() / 64), big.size() / 64));
    std::size_t sent = 0;
    bool ended = race(
        d, t,
        [&]() -> task<void> {
          auto r = co_await d.a.send_all(std::span<const const_buffer>(bufs));
          sent = r ? *r : 0;
        },
        [&] {
          std::vector<std::byte> sink(1 << 16);
          (void)::recv(d.b.native_handle(), sink.data(), sink.size(), MSG_DONTWAIT);
        },
        round % 2 == 0, ctx());
    ASSERT_TRUE(ended) << "round " << round << ": gather send_all kept waiting after cancel()";
    EXPECT_LT(sent, big.size()) << "round " << round;
  }
}

TEST_P(AdversarialCancel, SendFileCancelledInTheBatchOfItsStepEnds) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  std::vector<char> content(1 << 20, 'x');
  ASSERT_EQ(std::fwrite(content.data(), 1, content.size(), f), content.size());
  std::fflush(f);
  for (int round = 0; round < 10; ++round) {
    socket_pair d, t;
    int sz = 4096;
    ASSERT_EQ(::setsockopt(d.a.native_handle(), SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz), 0);
    std::uint64_t sent = 0;
    std::error_code err;
    bool ended = race(
        d, t,
        [&]() -> task<void> {
          auto r = co_await send_file(d.a, ::fileno(f), 0, content.size());
          if (r) sent = *r;
          else err = r.error();
        },
        [&] {
          std::vector<std::byte> sink(1 << 16);
          (void)::recv(d.b.native_handle(), sink.data(), sink.size(), MSG_DONTWAIT);
        },
        round % 2 == 0, ctx());
    ASSERT_TRUE(ended) << "round " << round << ": send_file kept waiting after cancel()";
    EXPECT_LT(sent, content.size()) << "round " << round;
  }
  std::fclose(f);
}

TEST_P(AdversarialCancel, BufferedReadExactCancelledInTheBatchOfItsStepEnds) {
  for (int round = 0; round < 10; ++round) {
    socket_pair d, t;
    buffered_stream bs(d.a, 8192);
    std::array<std::byte, 2000> dst{};
    std::size_t got = 0;
    std::error_code err;
    bool ended = race(
        d, t,
        [&]() -> task<void> {
          auto r = co_await bs.read_exact(mutable_buffer(dst.data(), dst.size()));
          if (r) got = *r;
          else err = r.error();
        },
        [&] {
          std::array<std::byte, 1000> bytes{};
          EXPECT_EQ(::send(d.b.native_handle(), bytes.data(), bytes.size(), 0), 1000);
        },
        round % 2 == 0, ctx());
    ASSERT_TRUE(ended) << "round " << round << ": buffered read_exact kept waiting after cancel()";
    if (got == 0) EXPECT_EQ(err, std::errc::operation_canceled) << "round " << round;
    else EXPECT_EQ(got, 1000u) << "round " << round;
  }
}

TEST_P(AdversarialCancel, BufferedReadUntilCancelledInTheBatchOfItsStepEnds) {
  for (int round = 0; round < 10; ++round) {
    socket_pair d, t;
    buffered_stream bs(d.a, 8192);
    std::error_code err;
    bool ok = false;
    bool ended = race(
        d, t,
        [&]() -> task<void> {
          auto r = co_await bs.read_until("\n");
          if (r) ok = true;
          else err = r.error();
        },
        [&] { EXPECT_EQ(::send(d.b.native_handle(), "abc", 3, 0), 3); }, round % 2 == 0, ctx());
    ASSERT_TRUE(ended) << "round " << round << ": read_until kept waiting after cancel()";
    EXPECT_FALSE(ok);
    EXPECT_EQ(err, std::errc::operation_canceled) << "round " << round;
    // Nothing lost: "abc" is either buffered or still in the socket.
    EXPECT_EQ(::send(d.b.native_handle(), "\n", 1, 0), 1);
    std::string line;
    run([&]() -> task<void> {
      auto r = co_await with_timeout(bs.read_until("\n"), 1s);
      if (r) line = std::string(*r);
      else line = "error: " + r.error().message();
    }());
    EXPECT_EQ(line, "abc\n") << "round " << round << ": bytes lost";
  }
}

TEST_P(AdversarialCancel, BufferedReadExactNCancelledInTheBatchOfItsStepEnds) {
  for (int round = 0; round < 10; ++round) {
    socket_pair d, t;
    buffered_stream bs(d.a, 8192);
    std::error_code err;
    bool ok = false;
    bool ended = race(
        d, t,
        [&]() -> task<void> {
          auto r = co_await bs.read_exact(std::size_t{100});
          if (r) ok = true;
          else err = r.error();
        },
        [&] { EXPECT_EQ(::send(d.b.native_handle(), "abc", 3, 0), 3); }, round % 2 == 0, ctx());
    ASSERT_TRUE(ended) << "round " << round << ": read_exact(n) kept waiting after cancel()";
    EXPECT_FALSE(ok);
    EXPECT_EQ(err, std::errc::operation_canceled) << "round " << round;
    // Nothing lost: "abc" is either buffered or still in the socket.
    EXPECT_EQ(::send(d.b.native_handle(), "\n", 1, 0), 1);
    std::string line;
    run([&]() -> task<void> {
      auto r = co_await with_timeout(bs.read_until("\n"), 1s);
      if (r) line = std::string(*r);
      else line = "error: " + r.error().message();
    }());
    EXPECT_EQ(line, "abc\n") << "round " << round << ": bytes lost";
  }
}

// Operations started right after cancel(), in the same loop iteration, are not affected.
TEST_P(AdversarialCancel, OperationsStartedAfterCancelAreNotAffected) {
  for (int round = 0; round < 10; ++round) {
    socket_pair d;
    std::error_code first_err;
    std::size_t second = 0;
    std::error_code second_err;
    bool ended = false;
    run([&]() -> task<void> {
      auto reader = [&]() -> task<void> {
        std::array<std::byte, 16> b{};
        auto r = co_await d.a.recv(b);
        if (!r) first_err = r.error();
        // restart at once: must not be hit by the earlier cancel
        auto r2 = co_await d.a.recv(b);
        if (r2) second = *r2;
        else second_err = r2.error();
      };
      auto canceller = [&]() -> task<void> {
        co_await yield();
        co_await yield();
        d.a.cancel();
        (void)(void)co_await sleep_for(30ms);
        EXPECT_EQ(::send(d.b.native_handle(), "hello", 5, 0), 5);
      };
      scope s;
      s.spawn(reader());
      s.spawn(canceller());
      ended = co_await join_within(s, 3s);
    }());
    ASSERT_TRUE(ended) << "round " << round;
    EXPECT_EQ(first_err, std::errc::operation_canceled) << "round " << round;
    EXPECT_EQ(second, 5u) << "round " << round << ": second recv: " << second_err.message();
  }
}

// cancel() followed, in the same task and iteration, by a new send on the same socket
// that must wait (full buffer): the send must not be cancelled.
TEST_P(AdversarialCancel, SendStartedRightAfterCancelCompletes) {
  for (int round = 0; round < 5; ++round) {
    socket_pair d;
    int sz = 4096;
    ASSERT_EQ(::setsockopt(d.a.native_handle(), SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz), 0);
    std::vector<std::byte> big(256 * 1024);
    std::size_t sent = 0;
    std::error_code err;
    std::error_code recv_err;
    std::size_t drained = 0;
    bool ended = false;
    run([&]() -> task<void> {
      auto reader = [&]() -> task<void> {
        std::array<std::byte, 16> b{};
        auto r = co_await d.a.recv(b);
        if (!r) recv_err = r.error();
      };
      auto sender = [&]() -> task<void> {
        co_await yield();
        co_await yield();
        d.a.cancel();
        auto r = co_await d.a.send_all(big);
        if (r) sent = *r;
        else err = r.error();
      };
      auto drain = [&]() -> task<void> {
        (void)(void)co_await sleep_for(30ms);
        std::vector<std::byte> sink(1 << 16);
        while (drained < big.size()) {
          auto r = co_await d.b.recv(sink);
          if (!r || *r == 0) break;
          drained += *r;
        }
      };
      scope s;
      s.spawn(reader());
      s.spawn(sender());
      s.spawn(drain());
      ended = co_await join_within(s, 3s);
    }());
    ASSERT_TRUE(ended) << "round " << round;
    EXPECT_EQ(recv_err, std::errc::operation_canceled);
    EXPECT_EQ(sent, big.size()) << "round " << round << ": " << err.message();
  }
}

// multishot_receiver next() cancelled in the batch in which data arrives.
TEST_P(AdversarialCancel, MultishotNextCancelledInTheBatchOfItsArrival) {
  for (int round = 0; round < 10; ++round) {
    socket_pair d, t;
    buffer_pool pool(ctx(), 16, 4096);
    std::string got;
    std::error_code err;
    bool ended = false;
    {
      multishot_receiver rx(d.a, pool);
      ended = race(
          d, t,
          [&]() -> task<void> {
            auto r = co_await rx.next();
            if (r) got.assign(reinterpret_cast<const char*>(r->data()), r->size());
            else err = r.error();
            if (!r) {  // cancelled: the data must still come on the next call
              auto r2 = co_await with_timeout(rx.next(), 1s);
              if (r2) got.assign(reinterpret_cast<const char*>(r2->data()), r2->size());
            }
          },
          [&] { EXPECT_EQ(::send(d.b.native_handle(), "abc", 3, 0), 3); }, round % 2 == 0, ctx());
    }
    ASSERT_TRUE(ended) << "round " << round;
    EXPECT_EQ(got, "abc") << "round " << round << " err " << err.message();
  }
}

// The same races with a stop token (the op's own scope stopped by the watchdog) instead
// of cancel(): the multi-step operation must end.
template <class Op, class Poke>
bool race_stop(socket_pair& d, socket_pair& t, Op op, Poke poke, bool trigger_first, io_context& ctx) {
  bool ended = false;
  sync_wait(ctx, [&]() -> task<void> {
    scope op_scope;
    auto watchdog = [&]() -> task<void> {
      std::array<std::byte, 1> one{};
      (void)co_await t.a.recv(one);
      op_scope.request_stop();
    };
    auto busy = [&]() -> task<void> {
      (void)(void)co_await sleep_for(20ms);
      if (trigger_first) {
        EXPECT_EQ(::send(t.b.native_handle(), "t", 1, 0), 1);
      }
      poke();
      if (!trigger_first) {
        EXPECT_EQ(::send(t.b.native_handle(), "t", 1, 0), 1);
      }
      spin_for(5ms);
    };
    scope s;
    op_scope.spawn(op());
    s.spawn(watchdog());
    s.spawn(busy());
    for (auto waited = 0ms; op_scope.size() > 0 && waited < 3s; waited += 10ms) (void)co_await sleep_for(10ms);
    ended = op_scope.size() == 0;
    s.request_stop();
    co_await s.join();
    // a hung op: cancel the socket to end it
    if (!ended) d.a.cancel();
    co_await op_scope.join();
  }());
  return ended;
}

TEST_P(AdversarialCancel, MultiStepOpsStoppedInTheBatchOfTheirStepEnd) {
  for (int kind = 0; kind < 4; ++kind) {
    for (int round = 0; round < 8; ++round) {
      socket_pair d, t;
      int sz = 4096;
      ASSERT_EQ(::setsockopt(d.a.native_handle(), SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz), 0);
      std::vector<std::byte> big(1 << 20);
      std::vector<const_buffer> bufs;
      for (int i = 0; i < 16; ++i) bufs.push_back(const_buffer(big.data() + i * (big.size() / 16), big.size() / 16));
      std::array<std::byte, 2000> dst{};
      buffered_stream bs(d.a, 8192);
      bool ended = race_stop(
          d, t,
          [&]() -> task<void> {
            if (kind == 0) (void)co_await d.a.recv_exact(dst);
            else if (kind == 1) (void)co_await d.a.send_all(big);
            else if (kind == 2) (void)co_await d.a.send_all(std::span<const const_buffer>(bufs));
            else (void)co_await bs.read_until("\n");
          },
          [&] {
            if (kind == 0 || kind == 3) {
              std::array<std::byte, 1000> bytes{};
              (void)::send(d.b.native_handle(), bytes.data(), kind == 3 ? 3 : bytes.size(), 0);
            } else {
              std::vector<std::byte> sink(1 << 16);
              (void)::recv(d.b.native_handle(), sink.data(), sink.size(), MSG_DONTWAIT);
            }
          },
          round % 2 == 0, ctx());
      ASSERT_TRUE(ended) << "kind " << kind << " round " << round << ": kept waiting after its stop";
    }
  }
}

// cancel() of one side of a copy_bidirectional waiting for data: the copy must end.
TEST_P(AdversarialCancel, CancelEndsCopyBidirectional) {
  for (int which = 0; which < 2; ++which) {
    socket_pair x, y;  // copy between x.a and y.a; x.b and y.b are the outside peers
    bool ended = false;
    std::string why;
    run([&]() -> task<void> {
      auto copier = [&]() -> task<void> {
        auto r = co_await copy_bidirectional(x.a, y.a);
        if (!r) why = "failed to start: " + r.error().message();
        else why = r->error.message();
      };
      auto canceller = [&]() -> task<void> {
        (void)(void)co_await sleep_for(30ms);
        (which ? y.a : x.a).cancel();
      };
      scope s;
      s.spawn(copier());
      s.spawn(canceller());
      ended = co_await join_within(s, 2s);
    }());
    EXPECT_TRUE(ended) << "copy_bidirectional kept running after cancel() of side " << which;
    std::printf("side %d: %s (%s)\n", which, ended ? "ended" : "kept running", why.c_str());
  }
}

RINGIO_ALL_BACKENDS(AdversarialCancel);

}  // namespace
