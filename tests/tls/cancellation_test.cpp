// SPDX-License-Identifier: Apache-2.0
// Stops at awkward points of a tls::stream: a recv stopped while half a record has
// arrived, and a seeded random run of full-duplex traffic with random stops and
// resets, whose invariant is that the bytes received are exactly the bytes sent.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class TlsCancellation : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(test_certs::get().ok);
  }
};

// Copies bytes from `from` to `to` until stopped (a stopped recv loses nothing; bytes
// already read still go out, even when the stop cuts their send short).
task<void> pump(stream_socket& from, stream_socket& to) {
  std::vector<std::byte> buf(65536);
  for (;;) {
    auto n = co_await from.recv(buf);
    if (!n || *n == 0) co_return;
    auto w = co_await to.send_all(const_buffer(buf.data(), *n));
    if (!w && w.error() != std::errc::operation_canceled) co_return;  // the peer is gone
    std::size_t sent = w ? *w : 0;
    while (sent < *n) {  // the rest of what was read (small: handshake messages, tickets)
      const ssize_t r = ::send(to.native_handle(), buf.data() + sent, *n - sent, MSG_NOSIGNAL);
      if (r <= 0) co_return;
      sent += static_cast<std::size_t>(r);
    }
    if (!w || *w < *n) co_return;  // stopped
  }
}

// Everything readable on `s` now (until 20 ms pass without a byte).
task<std::vector<std::byte>> drain(stream_socket& s) {
  std::vector<std::byte> all, buf(65536);
  for (;;) {
    auto n = co_await with_timeout(s.recv(buf), 20ms);
    if (!n || *n == 0) co_return all;
    all.insert(all.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
  }
}

TEST_P(TlsCancellation, ARecvStoppedInsideARecordLosesNothing) {
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  for (std::size_t split : {std::size_t{3}, std::size_t{20}}) {  // inside the header; inside the body
    socket_pair near, far;  // client <-> near.b ... far.b <-> server, relayed by the test
    auto c = tls::stream::client(cctx, std::move(near.a), "localhost");
    auto s = tls::stream::server(sctx, std::move(far.a));
    ASSERT_TRUE(c && s);
    run([](tls::stream& c, tls::stream& s, stream_socket& nb, stream_socket& fb, std::size_t split) -> task<void> {
      {
        std::stop_source stop;
        scope relay(stop.get_token());
        relay.spawn(pump(nb, fb));
        relay.spawn(pump(fb, nb));
        auto [hc, hs] = co_await when_all(c.handshake(), s.handshake());
        EXPECT_TRUE(hc && hs);
        stop.request_stop();
        co_await relay.join();
      }
      const std::string text = "kept across the stop, whatever the split";
      auto sent = co_await s.send_all(std::string_view(text));
      EXPECT_TRUE(sent);
      auto cipher = co_await drain(fb);  // tickets (TLS 1.3), then the record
      EXPECT_GT(cipher.size(), text.size());
      const std::size_t first = cipher.size() - text.size() - 16 - 1 + split;  // into the last record
      auto part = co_await nb.send_all(const_buffer(cipher.data(), first));
      EXPECT_TRUE(part);
      std::vector<std::byte> buf(128);
      auto stopped = co_await with_timeout(c.recv(buf), 30ms);
      EXPECT_FALSE(stopped);
      EXPECT_EQ(stopped.error(), std::errc::timed_out);
      auto rest = co_await nb.send_all(const_buffer(cipher.data() + first, cipher.size() - first));
      EXPECT_TRUE(rest);
      auto got = co_await with_timeout(c.recv_exact(mutable_buffer(buf.data(), text.size())), 1s);
      EXPECT_TRUE(got && *got == text.size());
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(buf.data()), text.size()), text) << "split " << split;
    }(*c, *s, near.b, far.b, split));
  }
}

// Echoes until the stream ends (then answers the close_notify) or fails.
task<void> echo(tls::stream& s) {
  std::vector<std::byte> buf(20000);
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n) co_return;
    if (*n == 0) {
      (void)co_await s.shutdown(1s);
      co_return;
    }
    auto w = co_await s.send_all(const_buffer(buf.data(), *n));
    if (!w || *w < *n) co_return;
  }
}

std::chrono::microseconds random_budget(std::mt19937_64& rng) {
  return std::chrono::microseconds(rng() % 4 == 0 ? 5'000'000 : static_cast<long>(rng() % 300));
}

struct traffic {
  std::vector<std::byte> sent, received;
  bool sender_done = false;
  bool failed = false;
  int stopped_sends = 0, short_sends = 0, stopped_recvs = 0;
};

// Sends random chunks, each under a random deadline; counts exactly what was taken.
task<void> random_sender(tls::stream& c, traffic& t, std::mt19937_64& rng, int chunks) {
  for (int i = 0; i < chunks && !t.failed; ++i) {
    auto chunk = random_bytes(1 + rng() % 200000, rng());
    auto n = co_await with_timeout(c.send_all(chunk), random_budget(rng));
    if (!n) {
      if (n.error() != std::errc::timed_out) t.failed = true;
      else ++t.stopped_sends;
      continue;
    }
    EXPECT_LE(*n, chunk.size());
    if (*n < chunk.size()) ++t.short_sends;
    t.sent.insert(t.sent.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(*n));
  }
  // A last send without deadline pushes out what a stopped send left queued.
  if (!t.failed) {
    auto tail = co_await c.send_all(std::string_view("."));
    if (tail && *tail == 1) t.sent.push_back(std::byte{'.'});
    else t.failed = true;
  }
  t.sender_done = true;
}

// Receives under random deadlines until it has everything sent (or a failure).
task<void> random_receiver(tls::stream& c, traffic& t, std::mt19937_64& rng) {
  std::vector<std::byte> buf(30000);
  while (!(t.sender_done && t.received.size() >= t.sent.size())) {
    auto n = co_await with_timeout(c.recv(mutable_buffer(buf.data(), 1 + rng() % buf.size())), random_budget(rng));
    if (!n) {
      if (n.error() == std::errc::timed_out) {
        ++t.stopped_recvs;
        continue;
      }
      t.failed = true;
      co_return;
    }
    if (*n == 0) co_return;
    t.received.insert(t.received.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
  }
}

task<void> reset_after(tls::stream& s, std::chrono::microseconds d) {
  auto slept = co_await sleep_for(d);
  EXPECT_TRUE(slept);
  ::shutdown(s.native_handle(), SHUT_RDWR);
}

TEST_P(TlsCancellation, RandomStopsAndResetsNeverLoseOrInventBytes) {
  const auto seed = test_seed();
  std::mt19937_64 rng(seed);
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  int clean = 0, reset = 0;
  traffic totals;
  for (int round = 0; round < 40; ++round) {
    const bool with_reset = rng() % 3 == 0;
    run([](stream_listener& l, tls::context& cctx, tls::context& sctx, std::mt19937_64& rng, bool with_reset,
           int& clean, int& reset, traffic& totals) -> task<void> {
      auto p = co_await make_tls_pair(l, cctx, sctx);
      auto hs = co_await handshake_both(p);
      EXPECT_TRUE(hs.first && hs.second);
      traffic t;
      scope s;
      s.spawn(echo(p.server));
      if (with_reset) s.spawn(reset_after(p.server, std::chrono::microseconds(rng() % 20000)));
      auto sender_rng = std::mt19937_64(rng());
      auto [a, b] = co_await when_all(random_sender(p.client, t, sender_rng, 1 + static_cast<int>(rng() % 30)),
                                      random_receiver(p.client, t, rng));
      (void)a;
      (void)b;
      // Whatever happened, the bytes received are a prefix of the bytes sent.
      EXPECT_LE(t.received.size(), t.sent.size());
      EXPECT_TRUE(std::equal(t.received.begin(), t.received.end(), t.sent.begin()));
      if (!with_reset) {
        EXPECT_FALSE(t.failed);
        EXPECT_EQ(t.received.size(), t.sent.size());
        auto closed = co_await p.client.shutdown(2s);
        EXPECT_TRUE(closed) << closed.error().message();
        ++clean;
      } else {
        ::shutdown(p.server.native_handle(), SHUT_RDWR);
        ++reset;
      }
      co_await s.join();
      totals.stopped_sends += t.stopped_sends;
      totals.short_sends += t.short_sends;
      totals.stopped_recvs += t.stopped_recvs;
    }(listener, cctx, sctx, rng, with_reset, clean, reset, totals));
  }
  std::printf("rounds: %d clean, %d with a reset; sends stopped: %d before and %d during; recvs stopped: %d\n", clean,
              reset, totals.stopped_sends, totals.short_sends, totals.stopped_recvs);
  EXPECT_GT(totals.stopped_recvs + totals.stopped_sends + totals.short_sends, 0);
}

}  // namespace

RINGIO_ALL_BACKENDS(TlsCancellation);
