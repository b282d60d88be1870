// SPDX-License-Identifier: Apache-2.0
// Gather writes: stream_socket::send and send_all over a sequence of buffers (one
// sendmsg per attempt), partial sends across buffer boundaries, more buffers than one
// sendmsg carries, stops, timeouts and peer resets, on every backend.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class GatherSend : public backend_test {};

// Cuts `data` into consecutive buffers of random sizes up to `largest` (some empty).
std::vector<const_buffer> slices(const std::vector<std::byte>& data, std::size_t largest, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<const_buffer> out;
  for (std::size_t at = 0; at < data.size();) {
    std::size_t n = rng() % 8 == 0 ? 0 : std::min<std::size_t>(1 + rng() % largest, data.size() - at);
    out.emplace_back(data.data() + at, n);
    at += n;
  }
  return out;
}

// Drops the first n bytes of `bufs` (a short send_all's count).
void drop_front(std::vector<const_buffer>& bufs, std::size_t n) {
  std::size_t i = 0;
  for (; i < bufs.size() && n >= bufs[i].size(); ++i) n -= bufs[i].size();
  bufs.erase(bufs.begin(), bufs.begin() + static_cast<std::ptrdiff_t>(i));
  if (!bufs.empty()) bufs.front() = bufs.front().skip(n);
}

void set_buffer_sizes(stream_socket& s, int bytes) {
  EXPECT_EQ(::setsockopt(s.native_handle(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes), 0);
  EXPECT_EQ(::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes), 0);
}

// A listener on 127.0.0.1 whose connections have small receive buffers and segments
// of an Ethernet's size. (Loopback's 64 KiB segments with a few KiB of window would
// leave TCP waiting for its persist timer, seconds at a time.)
stream_listener small_window_listener() {
  auto l = listen_loopback();
  int mss = 1400, rcvbuf = 16384;
  EXPECT_EQ(::setsockopt(l.native_handle(), IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss), 0);
  EXPECT_EQ(::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
  return l;
}

// A connected TCP pair over 127.0.0.1 from a small_window_listener: `a` sends through a
// small send buffer to `b`.
struct tcp_pair {
  stream_socket a, b;
};
task<tcp_pair> connect_pair(stream_listener& l, socket_address at) {
  auto c = co_await stream_socket::connect(at);
  auto s = co_await l.accept();
  EXPECT_TRUE(c && s);
  tcp_pair p;
  if (!c || !s) co_return p;
  p.a = std::move(*c);
  p.b = std::move(*s);
  int sndbuf = 16384;
  EXPECT_EQ(::setsockopt(p.a.native_handle(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
  co_return std::move(p);
}

// Reads until the end of the stream (or an error), slowly when `slow`.
task<std::vector<std::byte>> read_all(stream_socket& s, bool slow) {
  std::vector<std::byte> got;
  std::array<std::byte, 4096> buf;
  for (int i = 0;; ++i) {
    auto n = co_await with_timeout(s.recv(buf), 10s);
    EXPECT_TRUE(n) << n.error().message();
    if (!n || *n == 0) break;
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
    if (slow && i % 16 == 0) {
      auto slept = co_await sleep_for(1ms);
      EXPECT_TRUE(slept);
    }
  }
  co_return got;
}

std::size_t total_size(std::span<const const_buffer> bufs) {
  std::size_t n = 0;
  for (const auto& b : bufs) n += b.size();
  return n;
}

TEST_P(GatherSend, ManyBuffersOfRandomSizesReachASlowReaderInOrder) {
  auto l = small_window_listener();
  auto at = address_of(l);
  auto data = random_bytes(3 << 20, 21);
  auto bufs = slices(data, 40000, 22);
  ASSERT_GT(bufs.size(), 64u * 2);
  struct outcome {
    result<std::size_t> sent = 0;
    std::vector<std::byte> got;
  };
  auto o = run([](stream_listener& l, socket_address at, const std::vector<const_buffer>& bufs) -> task<outcome> {
    outcome o;
    auto p = co_await connect_pair(l, at);
    auto sender = [](stream_socket& s, const std::vector<const_buffer>& bufs, result<std::size_t>& sent) -> task<void> {
      sent = co_await s.send_all(bufs);
      auto shut = co_await s.shutdown();
      EXPECT_TRUE(shut);
    };
    auto reader = [](stream_socket& s, std::vector<std::byte>& got) -> task<void> { got = co_await read_all(s, true); };
    co_await when_all(sender(p.a, bufs, o.sent), reader(p.b, o.got));
    co_return o;
  }(l, at, bufs));
  ASSERT_TRUE(o.sent) << o.sent.error().message();
  EXPECT_EQ(*o.sent, data.size());
  EXPECT_EQ(o.got.size(), data.size());
  EXPECT_TRUE(o.got == data) << "the bytes differ or came out of order";
}

TEST_P(GatherSend, MoreBuffersThanOneSendmsgCarries) {
  socket_pair p;
  auto data = random_bytes(2000, 23);
  std::vector<const_buffer> tiny;
  for (std::size_t at = 0; at < data.size(); at += 2) tiny.emplace_back(data.data() + at, 2);  // 1,000 buffers
  auto got = run([](socket_pair& p, const std::vector<const_buffer>& tiny) -> task<std::vector<std::byte>> {
    // One sendmsg: the first 64 buffers at most (the socket has room for all of them).
    auto one = co_await p.a.send(tiny);
    EXPECT_TRUE(one && *one == detail::max_gather_buffers * 2) << (one ? *one : 0);
    std::vector<const_buffer> rest(tiny.begin() + static_cast<std::ptrdiff_t>(detail::max_gather_buffers), tiny.end());
    auto all = co_await p.a.send_all(rest);
    EXPECT_TRUE(all && *all == rest.size() * 2);
    ::shutdown(p.a.native_handle(), SHUT_WR);
    co_return co_await read_all(p.b, false);
  }(p, tiny));
  EXPECT_TRUE(got == data);
}

TEST_P(GatherSend, EmptySequencesSendNothing) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    std::vector<const_buffer> none;
    auto a = co_await p.a.send_all(none);
    EXPECT_TRUE(a && *a == 0u);
    std::array<const_buffer, 3> empties{};
    auto b = co_await p.a.send_all(empties);
    EXPECT_TRUE(b && *b == 0u);
    auto c = co_await p.a.send(empties);
    EXPECT_TRUE(c && *c == 0u);
    // Empty buffers among full ones are skipped.
    std::array<const_buffer, 4> mixed{const_buffer{}, const_buffer(std::string_view("ab")), const_buffer{},
                                      const_buffer(std::string_view("cd"))};
    auto d = co_await p.a.send_all(mixed);
    EXPECT_TRUE(d && *d == 4u);
    std::array<char, 8> buf{};
    auto n = co_await p.b.recv(buf);
    EXPECT_TRUE(n && *n == 4u && std::string_view(buf.data(), 4) == "abcd");
  }(p));
}

TEST_P(GatherSend, OneSendCanBeShortAndThePeerGetsExactlyThatPrefix) {
  socket_pair p;
  set_buffer_sizes(p.a, 4096);
  set_buffer_sizes(p.b, 4096);
  auto data = random_bytes(1 << 20, 24);
  auto bufs = slices(data, 100000, 25);
  auto [sent, got] =
      run([](socket_pair& p,
             const std::vector<const_buffer>& bufs) -> task<std::pair<std::size_t, std::vector<std::byte>>> {
        auto n = co_await p.a.send(bufs);
        EXPECT_TRUE(n) << n.error().message();
        ::shutdown(p.a.native_handle(), SHUT_WR);
        auto got = co_await read_all(p.b, false);
        co_return std::pair<std::size_t, std::vector<std::byte>>{n ? *n : 0, std::move(got)};
      }(p, bufs));
  EXPECT_GT(sent, 0u);
  EXPECT_LT(sent, data.size());
  ASSERT_EQ(got.size(), sent);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
}

TEST_P(GatherSend, StoppedSendAllReportsExactlyTheBytesThePeerReceives) {
  auto l = small_window_listener();
  auto at = address_of(l);
  auto data = random_bytes(8 << 20, 26);
  auto bufs = slices(data, 30000, 27);
  struct outcome {
    result<std::size_t> sent = 0;
    std::vector<std::byte> got;
  };
  auto o = run([](stream_listener& l, socket_address at, const std::vector<const_buffer>& bufs) -> task<outcome> {
    outcome o;
    auto p = co_await connect_pair(l, at);
    std::stop_source stop;
    auto sender = [](stream_socket& s, const std::vector<const_buffer>& bufs, std::stop_token t,
                     result<std::size_t>& sent) -> task<void> {
      sent = co_await s.send_all(bufs).with_stop(t);
      auto shut = co_await s.shutdown();
      EXPECT_TRUE(shut);
    };
    auto reader = [](stream_socket& s, std::stop_source& stop, std::vector<std::byte>& got) -> task<void> {
      std::array<std::byte, 4096> buf;
      for (int i = 0; i < 20; ++i) {  // slowly: the sender waits in the middle of its buffers
        auto n = co_await with_timeout(s.recv(buf), 5s);
        EXPECT_TRUE(n && *n > 0);
        if (!n || *n == 0) co_return;
        got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
        auto slept = co_await sleep_for(1ms);
        EXPECT_TRUE(slept);
      }
      stop.request_stop();
      auto rest = co_await read_all(s, false);
      got.insert(got.end(), rest.begin(), rest.end());
    };
    co_await when_all(sender(p.a, bufs, stop.get_token(), o.sent), reader(p.b, stop, o.got));
    co_return o;
  }(l, at, bufs));
  ASSERT_TRUE(o.sent) << "stopped after sending bytes, the count must come back: " << o.sent.error().message();
  EXPECT_GT(*o.sent, 0u);
  EXPECT_LT(*o.sent, data.size());
  EXPECT_EQ(*o.sent, o.got.size());
  EXPECT_TRUE(std::equal(o.got.begin(), o.got.end(), data.begin()));
}

TEST_P(GatherSend, ATimeoutBoundsTheWholeSendAll) {
  socket_pair p;
  set_buffer_sizes(p.a, 4096);
  set_buffer_sizes(p.b, 4096);
  auto data = random_bytes(4 << 20, 28);
  auto bufs = slices(data, 50000, 29);
  auto [sent, got] =
      run([](socket_pair& p,
             const std::vector<const_buffer>& bufs) -> task<std::pair<result<std::size_t>, std::vector<std::byte>>> {
        auto r = co_await with_timeout(p.a.send_all(bufs), 30ms);  // nobody reads meanwhile
        ::shutdown(p.a.native_handle(), SHUT_WR);
        auto got = co_await read_all(p.b, false);
        co_return std::pair<result<std::size_t>, std::vector<std::byte>>{r, std::move(got)};
      }(p, bufs));
  ASSERT_TRUE(sent) << sent.error().message();
  EXPECT_GT(*sent, 0u);
  EXPECT_LT(*sent, data.size());
  ASSERT_EQ(got.size(), *sent);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
  // Nothing sent at all: the error is the timeout.
  socket_pair q;
  set_buffer_sizes(q.a, 4096);
  auto none = run([](socket_pair& q, const std::vector<const_buffer>& bufs) -> task<result<std::size_t>> {
    auto filled = co_await with_timeout(q.a.send_all(bufs), 20ms);
    EXPECT_TRUE(filled);
    co_return co_await with_timeout(q.a.send_all(bufs), 20ms);
  }(q, bufs));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), std::errc::timed_out);
}

// The reader takes `keep` bytes, then resets the connection.
task<std::vector<std::byte>> read_then_reset(stream_socket& s, std::size_t keep) {
  std::vector<std::byte> got;
  std::array<std::byte, 4096> buf;
  while (got.size() < keep) {
    auto n = co_await with_timeout(s.recv(mutable_buffer(buf).first(keep - got.size())), 5s);
    EXPECT_TRUE(n && *n > 0);
    if (!n || *n == 0) break;
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
  }
  linger lg{1, 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  s = stream_socket();  // RST
  co_return got;
}

TEST_P(GatherSend, APeerResetMidSendEndsItWithTheCountSoFar) {
  auto l = small_window_listener();
  auto at = address_of(l);
  auto data = random_bytes(8 << 20, 30);
  auto bufs = slices(data, 60000, 31);
  auto [sent, got] =
      run([](stream_listener& l, socket_address at,
             const std::vector<const_buffer>& bufs) -> task<std::pair<result<std::size_t>, std::vector<std::byte>>> {
        auto p = co_await connect_pair(l, at);
        std::pair<result<std::size_t>, std::vector<std::byte>> out{0, {}};
        auto sender = [](stream_socket& s, const std::vector<const_buffer>& bufs,
                         result<std::size_t>& r) -> task<void> { r = co_await with_timeout(s.send_all(bufs), 10s); };
        auto reader = [](stream_socket& s, std::vector<std::byte>& got) -> task<void> {
          got = co_await read_then_reset(s, 100000);
        };
        co_await when_all(sender(p.a, bufs, out.first), reader(p.b, out.second));
        co_return out;
      }(l, at, bufs));
  ASSERT_TRUE(sent) << "bytes were sent before the reset: a count, not " << sent.error().message();
  EXPECT_GE(*sent, got.size());
  EXPECT_LT(*sent, data.size());
  EXPECT_EQ(got.size(), 100000u);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
}

// Random buffers sent in rounds cut short by random timeouts (and some one-shot
// sends); each short count is taken off the front and the rest sent again. The reader
// must see exactly the original bytes, in order. Then rounds that end in a reset at a
// random point: the count must cover what the reader got, and no more than was given.
TEST_P(GatherSend, SeededRandomStopsAndResetsKeepTheStreamExact) {
  const std::uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto data = random_bytes(2 << 20, seed);
  auto bufs = slices(data, 20000, seed + 1);
  auto l = small_window_listener();
  auto at = address_of(l);
  struct outcome {
    std::vector<std::byte> got;
    int short_rounds = 0;
  };
  auto o = run([](stream_listener& l, socket_address at, std::vector<const_buffer> bufs,
                  std::uint64_t seed) -> task<outcome> {
    outcome o;
    auto p = co_await connect_pair(l, at);
    auto sender = [](stream_socket& s, std::vector<const_buffer> rest, std::uint64_t seed,
                     int& short_rounds) -> task<void> {
      std::mt19937_64 rng(seed + 2);
      while (!rest.empty()) {
        const std::size_t want = total_size(rest);
        result<std::size_t> r = 0;
        if (rng() % 5 == 0) {
          r = co_await s.send(rest);
        } else {
          r = co_await with_timeout(s.send_all(rest), std::chrono::microseconds(rng() % 3000));
        }
        if (!r) {
          EXPECT_EQ(r.error(), std::errc::timed_out);
          if (r.error() != std::errc::timed_out) co_return;
          continue;
        }
        if (*r < want) ++short_rounds;
        drop_front(rest, *r);
      }
      auto shut = co_await s.shutdown();
      EXPECT_TRUE(shut);
    };
    auto reader = [](stream_socket& s, std::vector<std::byte>& got) -> task<void> { got = co_await read_all(s, true); };
    co_await when_all(sender(p.a, std::move(bufs), seed, o.short_rounds), reader(p.b, o.got));
    co_return o;
  }(l, at, bufs, seed));
  EXPECT_EQ(o.got.size(), data.size());
  EXPECT_TRUE(o.got == data) << "the stream differs from the buffers sent";
  std::printf("%d short rounds\n", o.short_rounds);

  std::mt19937_64 rng(seed + 3);
  for (int round = 0; round < 5; ++round) {
    const std::size_t keep = 1 + rng() % (data.size() / 2);
    auto [sent, got] = run([](stream_listener& l, socket_address at, const std::vector<const_buffer>& bufs,
                              std::size_t keep) -> task<std::pair<result<std::size_t>, std::vector<std::byte>>> {
      auto p = co_await connect_pair(l, at);
      std::pair<result<std::size_t>, std::vector<std::byte>> out{0, {}};
      auto sender = [](stream_socket& s, const std::vector<const_buffer>& bufs, result<std::size_t>& r) -> task<void> {
        r = co_await with_timeout(s.send_all(bufs), 10s);
      };
      auto reader = [](stream_socket& s, std::size_t keep, std::vector<std::byte>& got) -> task<void> {
        got = co_await read_then_reset(s, keep);
      };
      co_await when_all(sender(p.a, bufs, out.first), reader(p.b, keep, out.second));
      co_return out;
    }(l, at, bufs, keep));
    SCOPED_TRACE("round " + std::to_string(round) + ", reset after " + std::to_string(keep) + " bytes");
    ASSERT_TRUE(sent) << sent.error().message();
    EXPECT_GE(*sent, got.size());
    EXPECT_LE(*sent, data.size());
    EXPECT_EQ(got.size(), keep);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
  }
}

RINGIO_ALL_BACKENDS(GatherSend);

}  // namespace
