// SPDX-License-Identifier: Apache-2.0
// Zero-copy sends (io_context_options::zero_copy_send_threshold) on every backend: the
// bytes arrive intact at every size around the threshold, a send_all keeps going through
// partial sends, the buffer may be overwritten as soon as the send completes (the
// operation waits for the kernel's notification), a stop mid-send loses no count, a
// socket that refuses SEND_ZC falls back to copying, and a seeded random mix of sizes,
// stops and resets keeps every invariant. The readiness backends ignore the option.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <stop_token>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t threshold = 4096;
constexpr std::byte poison{0xee};

class ZeroCopySend : public ::testing::TestWithParam<backend_kind> {
 protected:
  void SetUp() override {
    try {
      ctx_.emplace(io_context_options{.backend = GetParam(), .quiet = true, .zero_copy_send_threshold = threshold});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here: " << e.what();
    }
  }
  void TearDown() override { ctx_.reset(); }
  io_context& ctx() { return *ctx_; }
  template <class T>
  T run(task<T> t) {
    return sync_wait(*ctx_, std::move(t));
  }
  // The uring backend on a kernel with SEND_ZC really sends zero-copy.
  bool zero_copy_on() const { return ctx_->describe().find("zero-copy send") != std::string::npos; }

 private:
  std::optional<io_context> ctx_;
};

struct tcp_pair {
  stream_socket sender, receiver;
};

// A connected TCP pair over loopback; `sndbuf` > 0 shrinks the sender's buffer so that
// large sends go out in many partial steps.
task<tcp_pair> connect_pair(stream_listener& l, int sndbuf = 0) {
  auto c = co_await stream_socket::connect(address_of(l));
  EXPECT_TRUE(c);
  auto a = co_await l.accept();
  EXPECT_TRUE(a);
  tcp_pair p{std::move(*c), std::move(*a)};
  if (sndbuf > 0) {
    EXPECT_EQ(::setsockopt(p.sender.native_handle(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
  }
  co_return p;
}

// Reads until end of stream or an error, `chunk` bytes at a time, pausing after every
// `pause_every` bytes (0: never) so that the sender's buffer fills.
task<std::vector<std::byte>> read_all(stream_socket& s, std::size_t chunk, std::size_t pause_every = 0) {
  std::vector<std::byte> got;
  std::vector<std::byte> buf(chunk);
  std::size_t since_pause = 0;
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) break;
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
    since_pause += *n;
    if (pause_every != 0 && since_pause >= pause_every) {
      since_pause = 0;
      auto slept = co_await sleep_for(1ms);
      EXPECT_TRUE(slept);
    }
  }
  co_return got;
}

task<void> stop_after(std::stop_source& stop, std::chrono::microseconds delay) {
  auto slept = co_await sleep_for(delay);
  EXPECT_TRUE(slept);
  stop.request_stop();
}

bool same_bytes(const std::vector<std::byte>& a, const std::byte* b, std::size_t n) {
  return a.size() == n && std::memcmp(a.data(), b, n) == 0;
}

TEST_P(ZeroCopySend, EverySizeAroundTheThresholdArrivesIntact) {
  auto l = listen_loopback();
  const std::size_t sizes[] = {1, 100, threshold - 1, threshold, threshold + 1, 65'536, 1 << 20, (3 << 20) + 7};
  run([](stream_listener& l, const std::size_t(&sizes)[8]) -> task<void> {
    auto p = co_await connect_pair(l);
    std::uint64_t seed = 1;
    for (std::size_t size : sizes) {
      auto data = random_bytes(size, seed++);
      std::vector<std::byte> in(size);
      auto [sent, got] = co_await when_all(p.sender.send_all(data), p.receiver.recv_exact(in));
      EXPECT_TRUE(sent && *sent == size) << size;
      EXPECT_TRUE(got && *got == size) << size;
      EXPECT_TRUE(in == data) << "bytes differ at size " << size;
    }
    // One send(2) over the threshold: whatever count it reports arrived intact.
    auto data = random_bytes(100'000, 99);
    auto n = co_await p.sender.send(data);
    EXPECT_TRUE(n && *n > 0);
    if (!n) co_return;
    std::vector<std::byte> in(*n);
    auto got = co_await p.receiver.recv_exact(in);
    EXPECT_TRUE(got && *got == *n);
    EXPECT_TRUE(same_bytes(in, data.data(), *n));
  }(l, sizes));
  if (zero_copy_on()) {
    EXPECT_GT(ctx().stats().zero_copy_sends, 0u);
    std::printf("zero-copy sends %llu, copied by the kernel %llu\n",
                static_cast<unsigned long long>(ctx().stats().zero_copy_sends),
                static_cast<unsigned long long>(ctx().stats().zero_copy_copied));
  }
  if (GetParam() != backend_kind::uring) {
    EXPECT_EQ(ctx().stats().zero_copy_sends, 0u);
  }
}

// 2 MiB through a 16 KiB send buffer to a slow reader: many partial sends. The buffer
// is overwritten the moment send_all completes; the peer must still read the original.
TEST_P(ZeroCopySend, BufferOverwrittenRightAfterCompletionArrivesAsSent) {
  auto l = listen_loopback();
  run([](stream_listener& l) -> task<void> {
    auto p = co_await connect_pair(l, 16 * 1024);
    const std::size_t size = 2 << 20;
    auto data = random_bytes(size, 7);
    const auto original = data;
    scope s;
    std::vector<std::byte> got;
    s.spawn([](stream_socket& r, std::vector<std::byte>& out) -> task<void> {
      out = co_await read_all(r, 4096, 64 * 1024);
    }(p.receiver, got));
    for (int round = 0; round < 3; ++round) {
      auto sent = co_await p.sender.send_all(data);
      EXPECT_TRUE(sent && *sent == size);
      std::fill(data.begin(), data.end(), poison);  // the kernel must be done with it
      data = original;
    }
    auto shut = co_await p.sender.shutdown();
    EXPECT_TRUE(shut);
    co_await s.join();
    EXPECT_EQ(got.size(), 3 * size);
    for (int round = 0; round < 3 && got.size() == 3 * size; ++round)
      EXPECT_EQ(std::memcmp(got.data() + round * size, original.data(), size), 0) << "round " << round;
  }(l));
}

// Reads everything until end of stream, starting only after `delay`.
task<void> read_all_later(stream_socket& s, std::chrono::milliseconds delay, std::vector<std::byte>& out) {
  auto slept = co_await sleep_for(delay);
  EXPECT_TRUE(slept);
  out = co_await read_all(s, 64 * 1024);
}

// A stop while the peer reads nothing: send_all reports how much the kernel took (or
// operation_canceled when nothing), the buffer is poisoned at once, and the peer reads
// exactly that many original bytes. Bytes a zero-copy step already queued keep the
// buffer in use until they leave the socket, so the peer starts reading later on: the
// send completes once its notification came, whenever that is.
TEST_P(ZeroCopySend, StopMidSendLosesNoCountAndReleasesTheBufferFirst) {
  auto l = listen_loopback();
  run([](stream_listener& l) -> task<void> {
    auto p = co_await connect_pair(l, 32 * 1024);
    const std::size_t size = 16 << 20;
    auto data = random_bytes(size, 11);
    const auto original = data;
    std::stop_source stop;
    std::vector<std::byte> got;
    scope s;
    s.spawn(stop_after(stop, 20ms));
    s.spawn(read_all_later(p.receiver, 200ms, got));
    auto sent = co_await p.sender.send_all(data).with_stop(stop.get_token());
    std::fill(data.begin(), data.end(), poison);
    std::size_t count = 0;
    if (sent) {
      count = *sent;
      EXPECT_LT(count, size) << "the peer read nothing before the stop";
    } else {
      EXPECT_EQ(sent.error(), std::errc::operation_canceled);
    }
    auto shut = co_await p.sender.shutdown();
    EXPECT_TRUE(shut);
    co_await s.join();
    EXPECT_EQ(got.size(), count);
    EXPECT_TRUE(same_bytes(got, original.data(), count));
  }(l));
}

// The same with a deadline (a linked timeout on io_uring): timed_out only when nothing
// was sent, otherwise the short count, and the peer reads exactly those bytes.
TEST_P(ZeroCopySend, DeadlineMidSendLosesNoCount) {
  auto l = listen_loopback();
  run([](stream_listener& l) -> task<void> {
    auto p = co_await connect_pair(l, 32 * 1024);
    const std::size_t size = 16 << 20;
    auto data = random_bytes(size, 13);
    const auto original = data;
    std::vector<std::byte> got;
    scope s;
    s.spawn(read_all_later(p.receiver, 200ms, got));
    auto sent = co_await with_timeout(p.sender.send_all(data), 20ms);
    std::fill(data.begin(), data.end(), poison);
    std::size_t count = 0;
    if (sent) {
      count = *sent;
      EXPECT_LT(count, size);
    } else {
      EXPECT_EQ(sent.error(), std::errc::timed_out);
    }
    auto shut = co_await p.sender.shutdown();
    EXPECT_TRUE(shut);
    co_await s.join();
    EXPECT_EQ(got.size(), count);
    EXPECT_TRUE(same_bytes(got, original.data(), count));
  }(l));
}

// AF_UNIX sockets refuse SEND_ZC: the send goes again by copy, transparently.
// A send waiting for its notification while the peer has stopped reading must not hold
// the context: destroying it returns at once (the peer resets the connection after 5 s
// to unblock a failing run).
TEST_P(ZeroCopySend, ContextDestroyedWhileThePeerStopsReading) {
  auto own = std::make_unique<io_context>(
      io_context_options{.backend = GetParam(), .quiet = true, .zero_copy_send_threshold = threshold});
  auto l = listen_loopback();
  auto pair = sync_wait(*own, connect_pair(l, 16384));
  const int peer = pair.receiver.release();
  int small = 4096;
  ASSERT_EQ(::setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  // Sends until the peer's window and our buffer are full; the peer never reads.
  own->spawn([](stream_socket s) -> task<void> {
    std::vector<std::byte> block(64 * 1024, std::byte{1});
    for (int i = 0; i < 256; ++i) {
      auto sent = co_await s.send_all(block);
      if (!sent || *sent != block.size()) co_return;
    }
  }(std::move(pair.sender)));
  sync_wait(*own, []() -> task<void> { (void)co_await sleep_for(300ms); }());
  std::atomic<bool> destroyed{false};
  bool peer_reset = false;
  std::thread unblock([&] {
    for (int i = 0; i < 500 && !destroyed.load(); ++i) std::this_thread::sleep_for(10ms);
    if (destroyed.load()) return;
    linger reset{1, 0};
    ::setsockopt(peer, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(peer);  // the reset lets the kernel drop the queued bytes
    peer_reset = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  own.reset();
  destroyed.store(true);
  const auto took = std::chrono::steady_clock::now() - t0;
  unblock.join();
  if (!peer_reset) ::close(peer);
  EXPECT_LT(took, 2s) << "~io_context waited " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms for the peer to read";
}

TEST_P(ZeroCopySend, SocketWithoutZeroCopySendsByCopy) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    for (std::size_t size : {threshold, std::size_t{256 * 1024}, std::size_t{3 << 20}}) {
      auto data = random_bytes(size, size);
      std::vector<std::byte> in(size);
      auto [sent, got] = co_await when_all(p.a.send_all(data), p.b.recv_exact(in));
      EXPECT_TRUE(sent && *sent == size);
      EXPECT_TRUE(got && *got == size);
      EXPECT_TRUE(in == data) << size;
    }
  }(p));
}

// A stop before the send starts sends nothing.
TEST_P(ZeroCopySend, StopBeforeStartSendsNothing) {
  auto l = listen_loopback();
  run([](stream_listener& l) -> task<void> {
    auto p = co_await connect_pair(l);
    auto data = random_bytes(1 << 20, 3);
    std::stop_source stop;
    stop.request_stop();
    auto sent = co_await p.sender.send_all(data).with_stop(stop.get_token());
    EXPECT_FALSE(sent);
    auto shut = co_await p.sender.shutdown();
    EXPECT_TRUE(shut);
    auto got = co_await read_all(p.receiver, 4096);
    EXPECT_TRUE(got.empty());
  }(l));
}

// Rounds of a few sends of random sizes around the threshold, each round with a random
// stop time (or none) on the sender and a receiver that reads to the end or resets the
// connection after a random amount. Invariants: the receiver's bytes are exactly the
// original prefixes the sender reported (a prefix of them after a reset), although
// every buffer is poisoned the moment its send completes.
TEST_P(ZeroCopySend, RandomSizesStopsAndResets) {
  const std::uint64_t seed = test_seed();
  auto l = listen_loopback();
  run([](stream_listener& l, std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    auto pick = [&rng](std::size_t lo, std::size_t hi) {
      return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
    };
    for (int round = 0; round < 40; ++round) {
      auto p = co_await connect_pair(l, pick(0, 1) == 0 ? 0 : static_cast<int>(pick(4096, 256 * 1024)));
      const bool reset = pick(0, 3) == 0;
      const std::size_t reset_after = pick(0, 2 << 20);
      std::stop_source stop;
      scope s;
      if (pick(0, 1) == 0) s.spawn(stop_after(stop, std::chrono::microseconds(pick(0, 20'000))));
      std::vector<std::byte> got;
      s.spawn([](stream_socket& r, std::vector<std::byte>& out, bool reset, std::size_t limit) -> task<void> {
        std::vector<std::byte> buf(16 * 1024);
        for (;;) {
          auto n = co_await r.recv(buf);
          if (!n || *n == 0) break;
          out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
          if (reset && out.size() >= limit) {
            linger lg{1, 0};  // close with RST
            EXPECT_EQ(::setsockopt(r.native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
            auto closed = co_await r.close();
            EXPECT_TRUE(closed);
            break;
          }
        }
      }(p.receiver, got, reset, reset_after));
      std::vector<std::byte> expected;
      const std::size_t messages = pick(1, 6);
      for (std::size_t m = 0; m < messages; ++m) {
        std::size_t size;
        switch (pick(0, 3)) {
          case 0:
            size = threshold - 1;
            break;
          case 1:
            size = threshold;
            break;
          case 2:
            size = threshold + 1;
            break;
          default:
            size = pick(1, 1 << 20);
            break;
        }
        auto data = random_bytes(size, seed + round * 16 + m);
        auto sent = co_await p.sender.send_all(data).with_stop(stop.get_token());
        if (!sent) break;
        EXPECT_LE(*sent, size);
        expected.insert(expected.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(*sent));
        std::fill(data.begin(), data.end(), poison);
        if (*sent < size) break;
      }
      (void)co_await p.sender.shutdown();
      stop.request_stop();
      co_await s.join();
      if (!reset) {
        EXPECT_EQ(got.size(), expected.size()) << "round " << round;
      }
      EXPECT_LE(got.size(), expected.size()) << "round " << round;
      const std::size_t n = std::min(got.size(), expected.size());
      EXPECT_EQ(std::memcmp(got.data(), expected.data(), n), 0) << "round " << round;
    }
  }(l, seed));
}

TEST(ZeroCopySendSetup, DescribeSaysWhetherItIsOn) {
  std::optional<io_context> uring;
  try {
    uring.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .zero_copy_send_threshold = 65536});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "io_uring cannot start here: " << e.what();
  }
  EXPECT_NE(uring->describe().find("zero-copy send >= 65536 B"), std::string::npos) << uring->describe();
  io_context off(io_context_options{.backend = backend_kind::uring, .quiet = true});
  EXPECT_EQ(off.describe().find("zero-copy"), std::string::npos);
  io_context poll(
      io_context_options{.backend = backend_kind::uring_poll, .quiet = true, .zero_copy_send_threshold = 65536});
  EXPECT_EQ(poll.describe().find("zero-copy"), std::string::npos) << "uring-poll sends by itself";
}

RINGIO_ALL_BACKENDS(ZeroCopySend);

}  // namespace
