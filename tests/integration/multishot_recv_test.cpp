// SPDX-License-Identifier: Apache-2.0
// multishot_receiver and buffer_pool: data arrives exactly, the pool running dry
// pauses and resumes a connection, cancellation and destruction lose and leak nothing.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class MultishotRecv : public backend_test {};

TEST_P(MultishotRecv, ReceivesEveryByteInOrderUntilEndOfStream) {
  socket_pair p;
  auto data = random_bytes(3 << 20, 21);
  auto got = run([](socket_pair& p, const std::vector<std::byte>& data) -> task<std::vector<std::byte>> {
    buffer_pool pool(*io_context::current(), 64, 4096);
    std::vector<std::byte> got;
    auto writer = [](stream_socket& s, const std::vector<std::byte>& d) -> task<void> {
      auto w = co_await s.send_all(d);
      EXPECT_TRUE(w);
      auto c = co_await s.shutdown();
      EXPECT_TRUE(c);
    };
    auto reader = [](stream_socket& s, buffer_pool& pool, std::vector<std::byte>& got) -> task<void> {
      multishot_receiver rx(s, pool);
      for (;;) {
        auto chunk = co_await rx.next();
        if (!chunk) {
          ADD_FAILURE() << chunk.error().message();
          co_return;
        }
        if (chunk->empty()) break;
        EXPECT_LE(chunk->size(), 4096u);
        got.insert(got.end(), chunk->bytes().begin(), chunk->bytes().end());
      }
      auto again = co_await rx.next();  // the end is sticky
      EXPECT_TRUE(again && again->empty());
    };
    co_await when_all(writer(p.b, data), reader(p.a, pool, got));
    EXPECT_EQ(pool.available(), pool.count()) << "buffers were not returned";
    co_return got;
  }(p, data));
  EXPECT_TRUE(got == data);
}

TEST_P(MultishotRecv, ARunDryPoolPausesTheConnectionAndReturnedBuffersResumeIt) {
  socket_pair p;
  auto data = random_bytes(64 * 1024, 22);
  auto got = run([](socket_pair& p, const std::vector<std::byte>& data) -> task<std::vector<std::byte>> {
    buffer_pool pool(*io_context::current(), 2, 1024);
    auto w = co_await p.b.send_all(data);
    EXPECT_TRUE(w);
    multishot_receiver rx(p.a, pool);
    std::vector<std::byte> got;
    std::vector<pooled_buffer> held;
    // Hold both buffers: the receiver has nowhere to put data until one comes back.
    for (int i = 0; i < 2; ++i) {
      auto c = co_await rx.next();
      EXPECT_TRUE(c && !c->empty());
      held.push_back(std::move(*c));
    }
    EXPECT_EQ(pool.available(), 0u);
    for (auto& h : held) got.insert(got.end(), h.bytes().begin(), h.bytes().end());
    held.clear();  // back to the pool: the receiver resumes
    while (got.size() < data.size()) {
      auto c = co_await with_timeout(rx.next(), 5s);
      if (!c || c->empty()) {
        ADD_FAILURE() << "stalled at " << got.size();
        break;
      }
      got.insert(got.end(), c->bytes().begin(), c->bytes().end());
    }
    co_return got;
  }(p, data));
  EXPECT_TRUE(got == data);
}

TEST_P(MultishotRecv, CancelledNextLosesNoData) {
  socket_pair p;
  auto result = run([](socket_pair& p) -> task<std::string> {
    buffer_pool pool(*io_context::current(), 8, 256);
    multishot_receiver rx(p.a, pool);
    std::stop_source src;
    auto stopper = [](std::stop_source& s) -> task<void> {
      co_await yield();
      s.request_stop();
    };
    auto [first, unused] = co_await when_all(rx.next().with_stop(src.get_token()), stopper(src));
    (void)unused;
    EXPECT_EQ(first.error(), std::errc::operation_canceled);
    auto w = co_await p.b.send_all(std::string_view("after cancel"));
    EXPECT_TRUE(w);
    auto c = co_await with_timeout(rx.next(), 5s);
    if (!c) co_return "error: " + c.error().message();
    co_return std::string(reinterpret_cast<const char*>(c->data()), c->size());
  }(p));
  EXPECT_EQ(result, "after cancel");
}

TEST_P(MultishotRecv, DestroyedWithQueuedDataReturnsEveryBuffer) {
  socket_pair p;
  unsigned available = run([](socket_pair& p) -> task<unsigned> {
    buffer_pool pool(*io_context::current(), 16, 128);
    {
      multishot_receiver rx(p.a, pool);
      auto first = co_await p.b.send_all(std::string_view("first"));
      EXPECT_TRUE(first);
      auto c = co_await with_timeout(rx.next(), 5s);  // arms the request
      EXPECT_TRUE(c && !c->empty());
      for (int i = 0; i < 5; ++i) {
        auto w = co_await p.b.send_all(std::string_view("0123456789"));
        EXPECT_TRUE(w);
        co_await yield();  // let each arrive as its own chunk
      }
      auto s = co_await sleep_for(20ms);
      EXPECT_TRUE(s);
    }                                   // destroyed with chunks queued (io_uring) or still in the socket
    auto s = co_await sleep_for(20ms);  // the cancelled request's last CQE
    EXPECT_TRUE(s);
    co_return pool.available();
  }(p));
  EXPECT_EQ(available, 16u);
}

TEST_P(MultishotRecv, ManyConnectionsShareOneSmallPool) {
  auto l = listen_loopback();
  auto at = address_of(l);
  int ok = run([](stream_listener& l, socket_address at) -> task<int> {
    buffer_pool pool(*io_context::current(), 32, 2048);
    int ok = 0;
    scope s;
    for (int c = 0; c < 20; ++c) {
      s.spawn([](stream_listener& l, buffer_pool& pool) -> task<void> {
        auto conn = co_await l.accept();
        multishot_receiver rx(*conn, pool);
        for (;;) {
          auto chunk = co_await rx.next();
          if (!chunk || chunk->empty()) co_return;
          auto w = co_await conn->send_all(chunk->bytes());
          if (!w) co_return;
        }
      }(l, pool));
      s.spawn([](socket_address at, int& ok, int seed) -> task<void> {
        auto conn = co_await stream_socket::connect(at);
        auto data = random_bytes(100000, seed);
        std::vector<std::byte> back(data.size());
        auto [w, r] = co_await when_all(conn->send_all(data), conn->recv_exact(back));
        if (w && r && back == data) ++ok;
      }(at, ok, c));
    }
    co_await s.join();
    co_return ok;
  }(l, at));
  EXPECT_EQ(ok, 20);
}

TEST_P(MultishotRecv, NextTimesOutOnASilentPeerAndTheDataStillArrivesLater) {
  socket_pair p;
  auto r = run([](socket_pair& p) -> task<std::pair<std::error_code, std::string>> {
    buffer_pool pool(*io_context::current(), 4, 64);
    multishot_receiver rx(p.a, pool);
    auto first = co_await with_timeout(rx.next(), std::chrono::milliseconds(30));
    auto w = co_await p.b.send_all(std::string_view("late"));
    EXPECT_TRUE(w);
    auto second = co_await with_timeout(rx.next(), std::chrono::seconds(5));
    std::string got = second ? std::string(reinterpret_cast<const char*>(second->data()), second->size()) : "";
    co_return std::pair{first.error(), got};
  }(p));
  EXPECT_EQ(r.first, std::errc::timed_out);
  EXPECT_EQ(r.second, "late");
}

// Many idle connections wait on a pool much smaller than their number: waiting holds
// no buffer (io_uring: the kernel picks one on arrival; readiness: taken on arrival).
TEST_P(MultishotRecv, WaitingConnectionsHoldNoBuffers) {
  constexpr int connections = 40;
  std::vector<socket_pair> pairs(connections);
  int ok = run([](std::vector<socket_pair>& pairs) -> task<int> {
    buffer_pool pool(*io_context::current(), 4, 256);
    int ok = 0;
    scope s;
    for (auto& p : pairs)
      s.spawn([](socket_pair& p, buffer_pool& pool, int& ok) -> task<void> {
        multishot_receiver rx(p.a, pool);
        std::string got;  // a stream may deliver "wake" in more than one piece
        while (got.size() < 4) {
          auto c = co_await with_timeout(rx.next(), std::chrono::seconds(5));
          if (!c || c->size() == 0) break;
          got.append(reinterpret_cast<const char*>(c->data()), c->size());
        }
        if (got == "wake") ++ok;
      }(p, pool, ok));
    auto settle = co_await sleep_for(std::chrono::milliseconds(20));  // all forty are waiting now
    EXPECT_TRUE(settle);
    EXPECT_EQ(pool.available(), 4u) << "waiting receivers hold buffers";
    for (auto& p : pairs) {
      auto w = co_await p.b.send_all(std::string_view("wake"));
      EXPECT_TRUE(w);
    }
    co_await s.join();
    co_return ok;
  }(pairs));
  EXPECT_EQ(ok, connections);
}

// when_any(next(), sleep) cancels next() on the loop's thread whenever the sleep wins;
// a chunk reaped before that next()'s completion runs must be queued, not dropped. A
// busy task on the same loop lets timer and data completions pile up between trips to
// the kernel, so they are often reaped together (a timer's just before a chunk's).
TEST_P(MultishotRecv, NextCancelledByRacingSleepsLosesNoByte) {
  socket_pair p;
  constexpr std::size_t total = 512 * 1024;
  auto data = random_bytes(total, 24);
  const int wfd = p.b.native_handle();
  std::thread writer([&data, wfd] {
    std::size_t off = 0;
    for (unsigned i = 0; off < total; ++i) {
      std::size_t n = std::min<std::size_t>(total - off, 1 + (i * 37) % 300);
      ssize_t w = ::send(wfd, data.data() + off, n, MSG_NOSIGNAL);
      if (w <= 0) break;
      off += static_cast<std::size_t>(w);
      if (i % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
    ::shutdown(wfd, SHUT_WR);
  });
  struct outcome {
    std::vector<std::byte> got;
    int cancelled = 0;
    unsigned available = 0, count = 0;
  };
  auto o = run([](socket_pair& p) -> task<outcome> {
    outcome o;
    buffer_pool pool(*io_context::current(), 8, 512);
    bool done = false;
    auto reader = [](stream_socket& s, buffer_pool& pool, outcome& o, bool& done) -> task<void> {
      multishot_receiver rx(s, pool);
      const auto give_up = std::chrono::steady_clock::now() + 20s;
      for (unsigned i = 0; std::chrono::steady_clock::now() < give_up; ++i) {
        auto r = co_await when_any(rx.next(), sleep_for(std::chrono::microseconds(5 + (i % 8) * 10)));
        if (r.index() == 1) {
          ++o.cancelled;
          continue;
        }
        auto& c = std::get<0>(r);
        if (!c) {
          ADD_FAILURE() << c.error().message();
          break;
        }
        if (c->empty()) break;
        o.got.insert(o.got.end(), c->bytes().begin(), c->bytes().end());
      }
      done = true;
    };
    auto busy = [](const bool& done) -> task<void> {
      while (!done) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(40);
        while (std::chrono::steady_clock::now() < until) {
        }
        co_await yield();
      }
    };
    co_await when_all(reader(p.a, pool, o, done), busy(done));
    o.available = pool.available();
    o.count = pool.count();
    co_return o;
  }(p));
  ::shutdown(p.a.native_handle(), SHUT_RDWR);  // never leave the writer blocked
  writer.join();
  EXPECT_GT(o.cancelled, 0);
  EXPECT_EQ(o.got.size(), data.size());
  EXPECT_TRUE(o.got == data) << "bytes lost or out of order";
  EXPECT_EQ(o.available, o.count) << "buffers were lost";
}

// stream_socket::cancel() ends a waiting next() with operation_canceled; what was
// received before or arrives after is still delivered, in order.
TEST_P(MultishotRecv, SocketCancelEndsAWaitingNextAndLosesNoData) {
  socket_pair p;
  struct outcome {
    result<pooled_buffer> cancelled = pooled_buffer{};
    std::string after;
    unsigned available = 0, count = 0;
  };
  auto o = run([](socket_pair& p) -> task<outcome> {
    outcome o;
    buffer_pool pool(*io_context::current(), 8, 256);
    {
      multishot_receiver rx(p.a, pool);
      auto canceller = [](stream_socket& s) -> task<void> {
        auto slept = co_await sleep_for(20ms);  // the next() waits by now
        EXPECT_TRUE(slept);
        s.cancel();
      };
      auto [first, unused] = co_await when_all(with_timeout(rx.next(), 2s), canceller(p.a));
      (void)unused;
      o.cancelled = std::move(first);
      // Data queued while nobody waits survives a cancel() too.
      auto w = co_await p.b.send_all(std::string_view("before"));
      EXPECT_TRUE(w);
      auto slept = co_await sleep_for(10ms);
      EXPECT_TRUE(slept);
      p.a.cancel();
      w = co_await p.b.send_all(std::string_view("|after"));
      EXPECT_TRUE(w);
      auto shut = co_await p.b.shutdown();
      EXPECT_TRUE(shut);
      for (;;) {
        auto c = co_await with_timeout(rx.next(), 2s);
        if (!c) {
          ADD_FAILURE() << c.error().message();
          break;
        }
        if (c->empty()) break;
        o.after.append(reinterpret_cast<const char*>(c->data()), c->size());
      }
    }
    o.available = pool.available();
    o.count = pool.count();
    co_return o;
  }(p));
  ASSERT_FALSE(o.cancelled) << "cancel() did not release next()";
  EXPECT_EQ(o.cancelled.error(), std::errc::operation_canceled) << o.cancelled.error().message();
  EXPECT_EQ(o.after, "before|after");
  EXPECT_EQ(o.available, o.count);
}

// The pool must go before its io_context; its buffers and receivers may outlive both
// (the last of them frees the memory without touching the context; ASan checks).
TEST_P(MultishotRecv, BuffersAndReceiversMayOutliveTheContext) {
  socket_pair p;
  std::optional<multishot_receiver> rx;
  pooled_buffer kept;
  {
    auto ctx = std::make_unique<io_context>(io_context_options{.backend = GetParam(), .quiet = true});
    buffer_pool pool(*ctx, 8, 256);
    rx.emplace(p.a, pool);
    kept = sync_wait(*ctx, [](multishot_receiver& rx, stream_socket& b) -> task<pooled_buffer> {
      auto w = co_await b.send_all(std::string_view("kept"));
      EXPECT_TRUE(w);
      auto c = co_await with_timeout(rx.next(), 5s);
      if (!c) {
        ADD_FAILURE() << c.error().message();
        co_return pooled_buffer{};
      }
      // More data: on io_uring it waits queued inside the receiver.
      w = co_await b.send_all(std::string_view("queued"));
      EXPECT_TRUE(w);
      auto slept = co_await sleep_for(10ms);
      EXPECT_TRUE(slept);
      co_return std::move(*c);
    }(*rx, p.b));
  }  // the pool goes, then the context
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(kept.data()), kept.size()), "kept");
  kept.release();
  rx.reset();
}

RINGIO_ALL_BACKENDS(MultishotRecv);

}  // namespace
