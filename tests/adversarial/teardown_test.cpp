// SPDX-License-Identifier: Apache-2.0
// Adversarial: shutting down under load. An io_context destroyed on its own thread with
// many operations of every kind pending (recv_exact with partial data, send_all on a
// full socket, gather send_all, send_file, buffered reads, multishot receivers, pooled
// receives, timers, channel receives, event waits, a spawn_on child on another loop)
// must return promptly and leave nothing behind (ASan). Each backend.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "ringio/net/buffered_stream.hpp"
#include "ringio/net/pooled_receive.hpp"
#include "ringio/net/send_file.hpp"
#include "ringio/ringio.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class AdversarialTeardown : public ::testing::TestWithParam<backend_kind> {};

struct world {
  std::vector<std::unique_ptr<socket_pair>> pairs;
  std::unique_ptr<channel<int>> ch = std::make_unique<channel<int>>(4);
  std::unique_ptr<event> ev = std::make_unique<event>();
  std::FILE* f = nullptr;
};

TEST_P(AdversarialTeardown, DestroyWithEverythingPending) {
  for (int variant = 0; variant < 2; ++variant) {
    std::unique_ptr<io_context> ctx;
    try {
      ctx = std::make_unique<io_context>(io_context_options{
          .backend = GetParam(), .quiet = true, .zero_copy_send_threshold = variant ? std::size_t{4096} : 0});
    } catch (const std::system_error&) {
      GTEST_SKIP();
    }
    io_context other(io_context_options{.backend = GetParam(), .quiet = true});
    std::thread other_thread([&] { other.run(); });
    world w;
    w.f = std::tmpfile();
    std::vector<char> content(1 << 20, 'f');
    std::fwrite(content.data(), 1, content.size(), w.f);
    std::fflush(w.f);
    auto pool = std::make_unique<buffer_pool>(*ctx, 16, 4096);
    auto l = listen_loopback();
    for (int i = 0; i < 12; ++i) w.pairs.push_back(std::make_unique<socket_pair>());
    // TCP pairs for send_all with zero copy
    std::vector<stream_socket> tcp;
    for (int i = 0; i < 2; ++i) {
      auto pr = sync_wait(*ctx, [](stream_listener& l) -> task<std::pair<stream_socket, stream_socket>> {
        auto [c, s] = co_await when_all(stream_socket::connect(address_of(l)), l.accept());
        co_return std::pair<stream_socket, stream_socket>{std::move(*c), std::move(*s)};
      }(l));
      tcp.push_back(std::move(pr.first));
      tcp.push_back(std::move(pr.second));
    }
    auto big = std::make_shared<std::vector<std::byte>>(4 << 20);
    auto& P = w.pairs;
    (void)::send(P[0]->b.native_handle(), "abc", 3, 0);
    ctx->spawn([](stream_socket& s) -> task<void> {
      std::array<std::byte, 100> b{};
      (void)co_await s.recv_exact(b);
    }(P[0]->a));
    ctx->spawn([](stream_socket& s, std::shared_ptr<std::vector<std::byte>> big) -> task<void> {
      (void)co_await s.send_all(*big);
    }(P[1]->a, big));
    ctx->spawn([](stream_socket& s, std::shared_ptr<std::vector<std::byte>> big) -> task<void> {
      std::array<const_buffer, 3> bufs{const_buffer(big->data(), 1 << 20), const_buffer(big->data(), 1 << 20),
                                       const_buffer(big->data(), 1 << 20)};
      (void)co_await s.send_all(std::span<const const_buffer>(bufs));
    }(P[2]->a, big));
    ctx->spawn([](stream_socket& s, std::FILE* f) -> task<void> {
      (void)co_await send_file(s, ::fileno(f), 0, 1 << 20);
    }(P[3]->a, w.f));
    (void)::send(P[4]->b.native_handle(), "partial", 7, 0);
    ctx->spawn([](stream_socket& s) -> task<void> {
      buffered_stream bs(s, 1024);
      (void)co_await bs.read_until("\n");
    }(P[4]->a));
    ctx->spawn([](stream_socket& s, buffer_pool& p) -> task<void> {
      multishot_receiver rx(s, p);
      for (;;) {
        auto r = co_await rx.next();
        if (!r || r->size() == 0) co_return;
      }
    }(P[5]->a, *pool));
    ctx->spawn(
        [](stream_socket& s, buffer_pool& p) -> task<void> { (void)co_await receive_pooled(s, p); }(P[6]->a, *pool));
    ctx->spawn([]() -> task<void> { (void)(void)co_await sleep_for(1h); }());
    ctx->spawn([](channel<int>& ch) -> task<void> { (void)co_await ch.receive(); }(*w.ch));
    ctx->spawn([](event& ev) -> task<void> { (void)co_await ev.wait(); }(*w.ev));
    ctx->spawn([](io_context& other) -> task<void> {
      co_await spawn_on(other, []() -> task<void> { (void)(void)co_await sleep_for(300ms); }());
    }(other));
    ctx->spawn([](stream_socket& s, std::shared_ptr<std::vector<std::byte>> big) -> task<void> {
      (void)co_await s.send_all(*big);  // zero copy in variant 1; the peer never reads
    }(tcp[0], big));
    ctx->spawn([](stream_socket& s) -> task<void> {
      std::array<std::byte, 10> b{};
      (void)co_await with_timeout(s.recv(b), 1h);
    }(tcp[3]));
    // Let everything get going.
    sync_wait(*ctx, []() -> task<void> { (void)(void)co_await sleep_for(50ms); }());
    pool.reset();  // before its context (documented); its receivers may outlive it
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<bool> done{false};
    std::thread guard([&] {
      for (int i = 0; i < 300 && !done; ++i) std::this_thread::sleep_for(10ms);
      if (!done) {
        std::fprintf(stderr, "~io_context still running after 3 s: aborting\n");
        std::abort();
      }
    });
    ctx.reset();
    done = true;
    guard.join();
    const auto took = std::chrono::steady_clock::now() - t0;
    other.stop();
    other_thread.join();
    std::fclose(w.f);
    EXPECT_LT(took, 1s) << "variant " << variant << ": ~io_context took "
                        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  }
}

INSTANTIATE_TEST_SUITE_P(, AdversarialTeardown,
                         ::testing::Values(backend_kind::uring, backend_kind::epoll, backend_kind::uring_poll),
                         [](const auto& i) {
                           std::string s(to_string(i.param));
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
