// SPDX-License-Identifier: Apache-2.0
// Adversarial: TLS over a loop with zero-copy sends: the stream's record buffers are reused
// right after each send completes; the peer must read exactly what was written, with
// stops cutting writes at random moments.
#include "ringio/tls.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/loopback.hpp"
#include "tls/test_certs.hpp"
#include "tls/tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

TEST(AdversarialTls, ZeroCopyTlsTransferIsIntact) {
  if (!test_certs::get().ok) GTEST_SKIP() << "no certificates";
  std::optional<io_context> ctx;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .zero_copy_send_threshold = 1024});
  } catch (const std::system_error&) {
    GTEST_SKIP();
  }
  auto cctx = make_client_context();
  auto sctx = make_server_context();
  auto l = listen_loopback();
  auto data = random_bytes(4 << 20, 42);
  std::vector<std::byte> got;
  std::size_t written = 0;
  sync_wait(*ctx, [&]() -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto hs = co_await handshake_both(p);
    EXPECT_TRUE(hs.first && hs.second);
    auto writer = [&]() -> task<void> {
      std::mt19937 rng(3);
      std::vector<std::byte> chunk;
      while (written < data.size()) {
        std::size_t n = std::min<std::size_t>(1 + rng() % 60000, data.size() - written);
        chunk.assign(data.begin() + written, data.begin() + written + n);
        auto r = co_await p.server.send_all(chunk);
        if (!r) break;
        written += *r;
        std::fill(chunk.begin(), chunk.end(), std::byte{0xAA});  // reused at once
      }
      (void)co_await p.server.send_close_notify(1s);
    };
    auto reader = [&]() -> task<void> {
      std::vector<std::byte> buf(1 << 16);
      for (;;) {
        auto r = co_await with_timeout(p.client.recv(buf), 5s);
        if (!r || *r == 0) co_return;
        got.insert(got.end(), buf.begin(), buf.begin() + *r);
      }
    };
    scope s;
    s.spawn(writer());
    s.spawn(reader());
    co_await s.join();
  }());
  ASSERT_EQ(written, data.size());
  ASSERT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data);
}

}  // namespace
