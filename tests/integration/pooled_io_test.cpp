// SPDX-License-Identifier: Apache-2.0
// receive_pooled (a receive that takes a pool buffer only when data is there),
// send_file (sendfile(2) driven by the loop), and io_context services, on every backend.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class PooledIo : public backend_test {};

// Requests a stop of `stop` after `delay`.
task<void> stop_after(std::stop_source& stop, std::chrono::milliseconds delay) {
  auto slept = co_await sleep_for(delay);
  EXPECT_TRUE(slept);
  stop.request_stop();
}

// A temporary file holding `data`; removed at the end.
struct temp_file {
  explicit temp_file(const std::vector<std::byte>& data) {
    char name[] = "/tmp/ringio-pooled-io-XXXXXX";
    fd = ::mkstemp(name);
    EXPECT_GE(fd, 0);
    ::unlink(name);
    EXPECT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  }
  ~temp_file() { ::close(fd); }
  int fd = -1;
};

TEST_P(PooledIo, AWaitingReceiveHoldsNoBufferAndGetsTheBytes) {
  socket_pair p;
  buffer_pool pool(ctx(), 4, 256);
  auto got = run([](socket_pair& p, buffer_pool& pool) -> task<std::string> {
    scope s;
    unsigned while_waiting = 0;
    s.spawn([](stream_socket& b, buffer_pool& pool, unsigned& seen) -> task<void> {
      auto slept = co_await sleep_for(20ms);  // the receive below waits by now
      EXPECT_TRUE(slept);
      seen = pool.available();
      auto sent = co_await b.send_all(std::string_view("hello"));
      EXPECT_TRUE(sent);
    }(p.b, pool, while_waiting));
    auto chunk = co_await receive_pooled(p.a, pool);
    co_await s.join();
    EXPECT_EQ(while_waiting, pool.count());
    if (!chunk) co_return "error: " + chunk.error().message();
    EXPECT_EQ(pool.available(), pool.count() - 1);  // held by `chunk`
    std::string text(reinterpret_cast<const char*>(chunk->data()), chunk->size());
    chunk->release();
    EXPECT_EQ(pool.available(), pool.count());
    co_return text;
  }(p, pool));
  EXPECT_EQ(got, "hello");
}

TEST_P(PooledIo, EndOfStreamIsAnEmptyBufferAndAStopCancels) {
  socket_pair p;
  buffer_pool pool(ctx(), 2, 128);
  run([](socket_pair& p, buffer_pool& pool) -> task<void> {
    std::stop_source stop;
    scope s;
    s.spawn(stop_after(stop, 10ms));
    auto stopped = co_await receive_pooled(p.a, pool).with_stop(stop.get_token());
    co_await s.join();
    EXPECT_FALSE(stopped);
    if (stopped) co_return;
    EXPECT_EQ(stopped.error(), std::errc::operation_canceled);
    EXPECT_EQ(pool.available(), pool.count());
    ::shutdown(p.b.native_handle(), SHUT_WR);
    auto end = co_await receive_pooled(p.a, pool);
    EXPECT_TRUE(end) << end.error().message();
    if (!end) co_return;
    EXPECT_TRUE(end->empty());
    EXPECT_EQ(pool.available(), pool.count());
  }(p, pool));
}

TEST_P(PooledIo, AnExhaustedPoolSaysSoAndTheDataStaysInTheSocket) {
  socket_pair p;
  buffer_pool pool(ctx(), 1, 64);
  run([](socket_pair& p, buffer_pool& pool) -> task<void> {
    auto sent = co_await p.b.send_all(std::string_view("first"));
    EXPECT_TRUE(sent);
    auto held = co_await receive_pooled(p.a, pool);  // takes the only buffer
    EXPECT_TRUE(held) << held.error().message();
    if (!held) co_return;
    sent = co_await p.b.send_all(std::string_view("second"));
    EXPECT_TRUE(sent);
    auto none = co_await receive_pooled(p.a, pool);
    EXPECT_FALSE(none);
    if (none) co_return;
    EXPECT_EQ(none.error(), std::errc::no_buffer_space);
    std::array<char, 16> buf{};
    auto n = co_await p.a.recv(buf);
    EXPECT_TRUE(n);
    if (n) {
      EXPECT_EQ(std::string_view(buf.data(), *n), "second");
    }
  }(p, pool));
}

TEST_P(PooledIo, ASmallRingHandsOutTheBuffersLastReturned) {
  // With every buffer in the kernel's ring, io_uring would take them in turn (all 64
  // written once after 64 receives); a ring of 2 refilled from the buffers last
  // returned touches no more than 3 of them (the readiness backends take the last
  // returned one).
  socket_pair p;
  buffer_pool pool(ctx(), 64, 256, {.initial_ring_buffers = 2});
  auto distinct = run([](socket_pair& p, buffer_pool& pool) -> task<std::size_t> {
    std::vector<const std::byte*> seen;
    for (int i = 0; i < 100; ++i) {
      auto sent = co_await p.b.send_all(std::string_view("x"));
      EXPECT_TRUE(sent);
      auto chunk = co_await receive_pooled(p.a, pool);
      EXPECT_TRUE(chunk) << chunk.error().message();
      if (!chunk) break;
      EXPECT_EQ(chunk->size(), 1U);
      if (std::find(seen.begin(), seen.end(), chunk->data()) == seen.end()) seen.push_back(chunk->data());
      chunk->release();
    }
    EXPECT_EQ(pool.available(), pool.count());
    co_return seen.size();
  }(p, pool));
  EXPECT_GE(distinct, 1U);
  EXPECT_LE(distinct, 3U) << "buffers of the pool used by 100 receives one after the other";
}

// Two receives whose data is there at once: counts those that found no buffer (each
// then receives again, and gets its bytes).
task<int> receive_pair(socket_pair& one, socket_pair& two, buffer_pool& pool) {
  auto sent = co_await one.b.send_all(std::string_view("one"));
  EXPECT_TRUE(sent);
  sent = co_await two.b.send_all(std::string_view("two"));
  EXPECT_TRUE(sent);
  int dry = 0;
  scope s;
  for (socket_pair* p : {&one, &two}) {
    s.spawn([](socket_pair& p, buffer_pool& pool, int& dry) -> task<void> {
      for (int attempt = 0; attempt < 2; ++attempt) {
        auto chunk = co_await receive_pooled(p.a, pool);
        if (!chunk && chunk.error() == std::errc::no_buffer_space) {
          ++dry;
          continue;
        }
        EXPECT_TRUE(chunk) << chunk.error().message();
        if (chunk) {
          EXPECT_EQ(chunk->size(), 3U);
        }
        co_return;
      }
      ADD_FAILURE() << "no buffer twice in a row";
    }(*p, pool, dry));
  }
  co_await s.join();
  co_return dry;
}

TEST_P(PooledIo, ASmallRingGrowsWhenItRunsDry) {
  socket_pair one, two;
  buffer_pool pool(ctx(), 8, 64, {.initial_ring_buffers = 1});
  run([](socket_pair& one, socket_pair& two, buffer_pool& pool) -> task<void> {
    // io_uring: both arrivals may be received before either completion is handled,
    // the second then finds the ring of 1 empty; the ring doubles, and the same
    // again finds a buffer for each.
    int first = co_await receive_pair(one, two, pool);
    EXPECT_LE(first, 1);
    int second = co_await receive_pair(one, two, pool);
    if (first == 1) {
      EXPECT_EQ(second, 0) << "the ring did not grow after it ran dry";
    }
    EXPECT_EQ(pool.available(), pool.count());
  }(one, two, pool));
}

TEST_P(PooledIo, SendFileSendsExactlyTheRangeToASlowReader) {
  socket_pair p;
  auto data = random_bytes(3 << 20, 7);
  temp_file f(data);
  const std::uint64_t offset = 1000, count = (5 << 19) + 17;  // 2.5 MiB and a bit
  auto got = run([](socket_pair& p, int fd, std::uint64_t offset, std::uint64_t count) -> task<std::vector<std::byte>> {
    std::vector<std::byte> got;
    scope s;
    s.spawn([](stream_socket& a, int fd, std::uint64_t offset, std::uint64_t count) -> task<void> {
      auto sent = co_await send_file(a, fd, offset, count);
      EXPECT_TRUE(sent && *sent == count) << (sent ? std::to_string(*sent) : sent.error().message());
      ::shutdown(a.native_handle(), SHUT_WR);
    }(p.a, fd, offset, count));
    std::array<std::byte, 65536> buf;
    for (int i = 0;; ++i) {
      auto n = co_await with_timeout(p.b.recv(buf), 5s);
      if (!n || *n == 0) break;
      got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
      if (i % 8 == 0) (void)co_await sleep_for(1ms);  // slower than the sender
    }
    co_await s.join();
    co_return got;
  }(p, f.fd, offset, count));
  ASSERT_EQ(got.size(), count);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + static_cast<std::ptrdiff_t>(offset)));
  // The socket is blocking again afterwards, as it was.
  EXPECT_EQ(::fcntl(p.a.native_handle(), F_GETFL) & O_NONBLOCK, 0);
}

TEST_P(PooledIo, StoppedSendFileReportsTheBytesThePeerGets) {
  socket_pair p;
  auto data = random_bytes(8 << 20, 8);
  temp_file f(data);
  auto [sent, received] = run([](socket_pair& p, int fd) -> task<std::pair<std::uint64_t, std::size_t>> {
    std::stop_source stop;
    scope s;
    s.spawn(stop_after(stop, 30ms));
    auto r = co_await send_file(p.a, fd, 0, 8 << 20).with_stop(stop.get_token());
    co_await s.join();
    EXPECT_TRUE(r);  // some bytes went before the stop: a short count
    ::shutdown(p.a.native_handle(), SHUT_WR);
    std::size_t total = 0;
    std::array<std::byte, 65536> buf;
    for (;;) {
      auto n = co_await p.b.recv(buf);
      if (!n || *n == 0) break;
      total += *n;
    }
    co_return std::pair<std::uint64_t, std::size_t>{r ? *r : 0, total};
  }(p, f.fd));
  EXPECT_GT(sent, 0u);
  EXPECT_LT(sent, 8u << 20);
  EXPECT_EQ(sent, received);
}

TEST_P(PooledIo, SendFileToAPeerThatLeftIsAnErrorNotASignal) {
  socket_pair p;
  auto data = random_bytes(1 << 20, 9);
  temp_file f(data);
  p.b = stream_socket();  // closes the peer
  auto r = run([](socket_pair& p, int fd) -> task<result<std::uint64_t>> {
    co_return co_await send_file(p.a, fd, 0, 1 << 20);
  }(p, f.fd));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::broken_pipe);
}

RINGIO_ALL_BACKENDS_AND_SIM(PooledIo);

// ---- io_context services ----

struct order_log {
  static inline std::vector<std::string> events;
};

struct logging_service : detail::context_service {
  explicit logging_service(io_context& ctx) : ctx(ctx) {}
  ~logging_service() override { order_log::events.push_back("service destroyed"); }
  io_context& ctx;
};

struct logs_on_destroy {
  ~logs_on_destroy() { order_log::events.push_back("task frame destroyed"); }
};

TEST(ContextService, OneInstancePerContextDestroyedAfterTheLastTask) {
  order_log::events.clear();
  {
    io_context ctx(io_context_options{.quiet = true});
    logging_service* first = nullptr;
    sync_wait(ctx, [](io_context& ctx, logging_service*& first) -> task<void> {
      first = &ctx.service<logging_service>();
      EXPECT_EQ(&ctx.service<logging_service>(), first);
      EXPECT_EQ(&first->ctx, &ctx);
      co_return;
    }(ctx, first));
    // A task still suspended when the context goes: its frame is destroyed first.
    ctx.spawn([](logs_on_destroy) -> task<void> { (void)co_await sleep_for(1h); }(logs_on_destroy{}));
    sync_wait(ctx, []() -> task<void> { (void)co_await sleep_for(5ms); }());  // it starts and waits
  }
  ASSERT_FALSE(order_log::events.empty());
  EXPECT_EQ(order_log::events.back(), "service destroyed");
}

}  // namespace
