// SPDX-License-Identifier: Apache-2.0
// Steady-state TLS echo allocates nothing through operator new: the coroutine frames
// of recv and send come from ringio's frame cache and the record buffers from the
// per-thread record cache. OpenSSL's own mallocs (its record buffers, freed between
// records with SSL_MODE_RELEASE_BUFFERS) are counted separately and reported.
#include <gtest/gtest.h>
#include <openssl/crypto.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/counting_new.hpp"
#include "support/loopback.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

std::atomic<long> openssl_mallocs{0};

void* counted_malloc(std::size_t n, const char*, int) {
  if (counting.load(std::memory_order_relaxed)) openssl_mallocs.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n);
}
void* counted_realloc(void* p, std::size_t n, const char*, int) {
  if (counting.load(std::memory_order_relaxed)) openssl_mallocs.fetch_add(1, std::memory_order_relaxed);
  return std::realloc(p, n);
}
void counted_free(void* p, const char*, int) { std::free(p); }

// Before OpenSSL's first allocation (static initialisation of this program).
const bool hooked = CRYPTO_set_mem_functions(counted_malloc, counted_realloc, counted_free) == 1;

task<void> echo(tls::stream& s) {
  std::vector<std::byte> buf(4096);
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) co_return;
    auto w = co_await s.send_all(const_buffer(buf.data(), *n));
    if (!w) co_return;
  }
}

class TlsAllocation : public backend_test {};

TEST_P(TlsAllocation, SteadyStateEchoCallsNoOperatorNew) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the frame cache";
#endif
  ASSERT_TRUE(test_certs::get().ok);
  EXPECT_TRUE(hooked) << "OpenSSL's allocations cannot be counted";
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  constexpr int warmup = 200, counted = 5000;
  auto [news, mallocs] =
      run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<std::pair<long, long>> {
        auto p = co_await make_tls_pair(l, cctx, sctx);
        auto hs = co_await handshake_both(p);
        EXPECT_TRUE(hs.first && hs.second);
        scope s;
        s.spawn(echo(p.server));
        std::vector<std::byte> out(512, std::byte{7}), in(512);
        for (int i = 0; i < warmup + counted; ++i) {
          if (i == warmup) {
            allocations = 0;
            openssl_mallocs = 0;
            counting = true;
          }
          auto w = co_await p.client.send_all(out);
          auto r = co_await p.client.recv_exact(in);
          if (!w || !r || *r != in.size()) {
            ADD_FAILURE() << "round trip " << i << " failed";
            break;
          }
        }
        counting = false;
        std::pair<long, long> seen{allocations.load(), openssl_mallocs.load()};
        (void)co_await p.client.shutdown(std::chrono::seconds(1));
        co_await s.join();
        co_return seen;
      }(listener, cctx, sctx));
  EXPECT_EQ(news, 0) << "operator new calls in " << counted << " round trips";
  std::printf("OpenSSL mallocs: %.2f per round trip (%ld in %d)\n", static_cast<double>(mallocs) / counted, mallocs,
              counted);
}

}  // namespace

RINGIO_ALL_BACKENDS(TlsAllocation);
