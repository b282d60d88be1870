// SPDX-License-Identifier: Apache-2.0
// What an idle keep-alive connection of http::server holds on the heap: the global
// operator new is replaced by one that counts the bytes held (malloc_usable_size), and
// 64 more connections, each idle after one request, may cost no more than 64
// coroutine frames of 512 bytes: no buffer, no request state, no stop source
// (docs/http.md, "Memory per connection"). On io_uring and uring-poll.
#include <gtest/gtest.h>
#include <malloc.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string_view>
#include <vector>

#include "ringio/detail/frame_allocator.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

namespace {
std::atomic<long> live_bytes{0};
}  // namespace

// The replacements pair malloc with free; GCC cannot see that and warns.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  live_bytes.fetch_add(static_cast<long>(::malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  live_bytes.fetch_sub(static_cast<long>(::malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view request_text = "GET / HTTP/1.1\r\nHost: test\r\n\r\n";
constexpr std::string_view hello = "Hello world!";

// Opens `n` connections one after the other; each sends one request, reads the whole
// response and stays open (idle).
task<void> open_idle(socket_address at, std::vector<stream_socket>& clients, int n) {
  for (int i = 0; i < n; ++i) {
    auto s = co_await stream_socket::connect(at);
    EXPECT_TRUE(s);
    if (!s) co_return;
    auto sent = co_await s->send_all(request_text);
    EXPECT_TRUE(sent);
    std::array<char, 1024> in{};
    std::size_t got = 0;
    while (got < hello.size() || std::string_view(in.data(), got).substr(got - hello.size()) != hello) {
      auto r = co_await s->recv(std::span(in).subspan(got));
      EXPECT_TRUE(r && *r > 0);
      if (!r || *r == 0) co_return;
      got += *r;
    }
    clients.push_back(std::move(*s));
  }
  auto settled = co_await sleep_for(20ms);  // the last connection's response completes server-side
  EXPECT_TRUE(settled);
}

class HttpIdleMemory : public backend_test {};

TEST(HttpIdleMemoryCounter, CountsTheBytesHeld) {
  const long before = live_bytes.load();
  auto* p = new std::array<char, 1000>();
  EXPECT_GE(live_bytes.load() - before, 1000) << "the replaced operator new is not in effect";
  delete p;
  EXPECT_EQ(live_bytes.load(), before);
}

TEST_P(HttpIdleMemory, AnIdleConnectionHoldsOneFrameOf512Bytes) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache and change the heap's block sizes";
#elif defined(__clang__)
  GTEST_SKIP() << "the frame's size is the compiler's layout: the 512-byte bound is that of GCC's frame";
#endif
  if (GetParam() == backend_kind::epoll) {
    GTEST_SKIP() << "the epoll backend's table of descriptors (40 bytes each, grown by doubling) holds heap "
                    "of its own for every connection";
  }
  http::router routes;
  routes.get("/", [](http::request&) -> task<http::response> { co_return http::response::borrowed(200, hello); });
  http::server srv(routes);
  auto l = listen_loopback();
  const socket_address at = address_of(l);
  const long per_connection = run([](http::server& srv, stream_listener& l, socket_address at) -> task<long> {
    // Frames that earlier tests left in this thread's cache would serve the connections
    // without a heap allocation.
    ringio::detail::frame_cache_trim();
    std::stop_source stop;
    scope server;
    server.spawn(srv.serve(l, stop.get_token()));
    std::vector<stream_socket> clients;
    clients.reserve(128);
    co_await open_idle(at, clients, 64);  // warms the caches: frames, request state, buffers
    const long before = live_bytes.load();
    co_await open_idle(at, clients, 64);
    const long after = live_bytes.load();
    EXPECT_EQ(clients.size(), 128U);
    clients.clear();
    stop.request_stop();
    co_await server.join();
    co_return (after - before) / 64;
  }(srv, l, at));
  // One frame of the 512-byte class (malloc_usable_size 520); a 576-byte frame, or a
  // stop source's state (24 bytes) held besides, is more.
  EXPECT_LE(per_connection, 520) << "heap bytes per idle connection";
  EXPECT_GT(per_connection, 0);
}

RINGIO_ALL_BACKENDS(HttpIdleMemory);

}  // namespace
