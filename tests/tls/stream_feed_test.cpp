// SPDX-License-Identifier: Apache-2.0
// The tls::stream pieces a server loop uses to wait without a buffer and to bound its
// operations: feed() of ciphertext received elsewhere, has_buffered_input(), recv with
// a deadline and recv_wait::with_buffer, send_all with a deadline, send_close_notify.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class TlsStreamFeed : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(test_certs::get().ok);
  }
};

std::string text_of(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

TEST_P(TlsStreamFeed, FedCiphertextIsDecryptedByTheNextRecv) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& sctx, tls::context& cctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto [hc, hs] = co_await handshake_both(p);
    EXPECT_TRUE(hc && hs);
    EXPECT_FALSE(p.server.has_buffered_input());
    auto sent = co_await p.client.send_all(std::string_view("hello, fed"));
    EXPECT_TRUE(sent);
    // The ciphertext, received from the socket by the caller, in two pieces.
    std::vector<std::byte> raw(4096);
    auto n = co_await with_timeout(p.server.socket().recv(raw), 5s);
    EXPECT_TRUE(n && *n > 10);
    if (!n) co_return;
    auto first = p.server.feed(std::span(raw).first(5));
    auto second = p.server.feed(std::span(raw).subspan(5, *n - 5));
    EXPECT_TRUE(first && second);
    EXPECT_TRUE(p.server.has_buffered_input());
    std::vector<std::byte> plain(100);
    auto got = co_await with_timeout(p.server.recv(plain), 5s);
    EXPECT_TRUE(got);
    if (got) {
      EXPECT_EQ(text_of(std::span(plain).first(*got)), "hello, fed");
    }
    EXPECT_FALSE(p.server.has_buffered_input());
    // Too much at once: refused, nothing taken.
    std::vector<std::byte> huge(64 * 1024);
    auto refused = p.server.feed(huge);
    EXPECT_FALSE(refused);
    if (!refused) {
      EXPECT_EQ(refused.error(), std::errc::no_buffer_space);
    }
    EXPECT_FALSE(p.server.has_buffered_input());
  }(listener, sctx, cctx));
}

TEST_P(TlsStreamFeed, RecvDeadlineTimesOutAndLosesNothing) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& sctx, tls::context& cctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto [hc, hs] = co_await handshake_both(p);
    EXPECT_TRUE(hc && hs);
    std::vector<std::byte> plain(100);
    for (auto wait : {tls::recv_wait::without_buffer, tls::recv_wait::with_buffer}) {
      auto begun = std::chrono::steady_clock::now();
      auto late = co_await p.server.recv(plain, begun + 50ms, wait);
      EXPECT_FALSE(late);
      if (!late) {
        EXPECT_EQ(late.error(), std::errc::timed_out);
      }
      EXPECT_GE(std::chrono::steady_clock::now() - begun, 45ms);
      auto sent = co_await p.client.send_all(std::string_view("after"));
      EXPECT_TRUE(sent);
      auto got = co_await p.server.recv(plain, std::chrono::steady_clock::now() + 5s, wait);
      EXPECT_TRUE(got);
      if (got) {
        EXPECT_EQ(text_of(std::span(plain).first(*got)), "after");
      }
    }
  }(listener, sctx, cctx));
}

TEST_P(TlsStreamFeed, SendAllDeadlineStopsAgainstAReaderThatNeverReads) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& sctx, tls::context& cctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto [hc, hs] = co_await handshake_both(p);
    EXPECT_TRUE(hc && hs);
    std::string big(32 << 20, 'b');
    auto begun = std::chrono::steady_clock::now();
    auto sent = co_await p.server.send_all(std::string_view(big), begun + 200ms);
    auto took = std::chrono::steady_clock::now() - begun;
    EXPECT_TRUE(!sent || *sent < big.size());  // a short count, or timed_out
    if (!sent) {
      EXPECT_EQ(sent.error(), std::errc::timed_out);
    }
    EXPECT_LT(took, 3s);
  }(listener, sctx, cctx));
}

TEST_P(TlsStreamFeed, SendCloseNotifyEndsTheStreamCleanly) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& sctx, tls::context& cctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto [hc, hs] = co_await handshake_both(p);
    EXPECT_TRUE(hc && hs);
    auto sent = co_await p.server.send_all(std::string_view("bye"));
    EXPECT_TRUE(sent);
    auto notified = co_await p.server.send_close_notify(1s);
    EXPECT_TRUE(notified) << (notified ? "" : notified.error().message());
    auto again = co_await p.server.send_close_notify(1s);  // already sent: only flushes
    EXPECT_TRUE(again);
    std::vector<std::byte> plain(100);
    auto got = co_await with_timeout(p.client.recv(plain), 5s);
    EXPECT_TRUE(got && *got == 3);
    auto end = co_await with_timeout(p.client.recv(plain), 5s);
    EXPECT_TRUE(end && *end == 0) << "close_notify reads as a clean end";
  }(listener, sctx, cctx));
}

}  // namespace

RINGIO_ALL_BACKENDS(TlsStreamFeed);
