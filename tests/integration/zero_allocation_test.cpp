// SPDX-License-Identifier: Apache-2.0
// Steady-state I/O allocates nothing: 10,000 echo round trips after a warm-up, with
// the global operator new replaced by a counting one (also: buffered_stream lines and
// gather writes, a batching_writer's messages).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/any_opcode.hpp"
#include "ringio/exec.hpp"
#include "ringio/exec/any_opcode.hpp"
#include "ringio/fiber.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/counting_new.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

task<void> echo_one(stream_socket s) {
  std::array<std::byte, 4096> buf;
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) co_return;
    auto w = co_await s.send_all(std::span(buf).first(*n));
    if (!w) co_return;
  }
}

// Round trips of `size` bytes; counting starts after `warmup` of them.
// Echoes through a multishot receiver, sending each wake-up's buffers with one gathered
// send (bundles and incremental slices arrive several at a time).
task<void> batched_echo(stream_socket& s, buffer_pool& pool) {
  multishot_receiver rx(s, pool);
  std::array<pooled_buffer, 8> held;
  std::array<const_buffer, 8> out;
  for (;;) {
    auto chunk = co_await rx.next();
    if (!chunk || chunk->empty()) co_return;
    held[0] = std::move(*chunk);
    std::size_t n = 1;
    while (n < held.size() && rx.next_ready(held[n])) ++n;
    for (std::size_t i = 0; i < n; ++i) out[i] = const_buffer(held[i].data(), held[i].size());
    auto w = co_await s.send_all(std::span<const const_buffer>(out.data(), n));
    if (!w) co_return;
    for (std::size_t i = 0; i < n; ++i) held[i].release();
  }
}

task<long> client(socket_address to, int warmup, int counted, std::size_t size) {
  auto s = co_await stream_socket::connect(to);
  EXPECT_TRUE(s);
  std::array<std::byte, 512> out{}, in{};
  long during = -1;
  int completed = 0;
  for (int i = 0; i < warmup + counted; ++i) {
    if (i == warmup) {
      allocations = 0;
      counting = true;
    }
    auto w = co_await s->send_all(std::span(out).first(size));
    auto r = co_await s->recv_exact(std::span(in).first(size));
    if (!w || !r || *r != size) {
      ADD_FAILURE() << "round trip " << i << " failed";
      break;
    }
    if (i >= warmup) ++completed;
  }
  counting = false;
  during = allocations.load();
  EXPECT_EQ(completed, counted);
  co_return during;
}

class ZeroAllocation : public backend_test {};

TEST_P(ZeroAllocation, EchoRoundTripsAllocateNothing) {
  auto l = listen_loopback();
  auto at = address_of(l);
  long allocs = run([](stream_listener& l, socket_address at) -> task<long> {
    scope server;
    auto accept_then_echo = [](stream_listener& l) -> task<void> {
      auto s = co_await l.accept();
      EXPECT_TRUE(s);
      if (s) co_await echo_one(std::move(*s));
    };
    server.spawn(accept_then_echo(l));
    long n = co_await client(at, 1000, 10'000, 128);
    co_await server.join();
    co_return n;
  }(l, at));
  EXPECT_EQ(allocs, 0) << "allocations during 10,000 round trips";
}

// Sender echo: the server is repeat_until(recv | let_value(send_all)), the client a
// loop of when_all(send_all, recv_exact) raced against a timer with when_any; every
// operation state lives inside the loop's own state.
TEST_P(ZeroAllocation, SenderEchoLoopAllocatesNothing) {
  namespace ex = ringio::exec;
  socket_pair p;
  std::array<std::byte, 256> server_buf{}, out{}, in{};
  int rounds = 0, failures = 0;
  const int warmup = 1000, counted = 10'000;
  auto server = ex::repeat_until([&] {
    return ex::recv(p.a, server_buf) | ex::let_value([&](std::size_t n) {
             return ex::send_all(p.a, std::span(server_buf).first(n)) | ex::then([n](std::size_t) { return n == 0; });
           });
  });
  auto client = ex::repeat_until([&] {
    if (rounds == warmup) {
      allocations = 0;
      counting = true;
    }
    return ex::when_any(ex::when_all(ex::send_all(p.b, std::span(out).first(128)),
                                     ex::recv_exact(p.b, std::span(in).first(128))),
                        ex::fail_after(std::chrono::seconds(5))) |
           ex::then([&](std::size_t sent, std::size_t got) {
             if (sent != 128 || got != 128) ++failures;
             return ++rounds == warmup + counted;
           });
  });
  auto done = ex::sync_wait(ctx(), ex::when_all(std::move(client) | ex::let_value([&] {
                                                  counting = false;
                                                  return ex::shutdown(p.b);
                                                }),
                                                std::move(server)));
  counting = false;
  EXPECT_TRUE(done);
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(rounds, warmup + counted);
  EXPECT_EQ(allocations.load(), 0) << "allocations during 10,000 sender round trips";
}

TEST_P(ZeroAllocation, TimedOperationsAllocateNothing) {
  // with_timeout on every receive: linked timeouts / timer heap entries included.
  auto l = listen_loopback();
  auto at = address_of(l);
  long allocs = run([](stream_listener& l, socket_address at) -> task<long> {
    scope server;
    server.spawn([](stream_listener& l) -> task<void> {
      auto s = co_await l.accept();
      if (s) co_await echo_one(std::move(*s));
    }(l));
    auto s = co_await stream_socket::connect(at);
    std::array<std::byte, 64> buf{};
    long during = 0;
    for (int i = 0; i < 3000; ++i) {
      if (i == 1000) {
        allocations = 0;
        counting = true;
      }
      auto w = co_await s->send_all(buf);
      auto r = co_await with_timeout(s->recv_exact(buf), std::chrono::seconds(5));
      if (!w || !r) break;
    }
    counting = false;
    during = allocations.load();
    s = unexpected(std::errc::not_connected);  // closes the client: the server ends
    co_await server.join();
    co_return during;
  }(l, at));
  EXPECT_EQ(allocs, 0);
}

TEST_P(ZeroAllocation, MultishotReceiverEchoAllocatesNothing) {
  auto l = listen_loopback();
  auto at = address_of(l);
  long allocs = run([](stream_listener& l, socket_address at) -> task<long> {
    buffer_pool pool(*io_context::current(), 64, 4096);
    scope server;
    server.spawn([](stream_listener& l, buffer_pool& pool) -> task<void> {
      auto s = co_await l.accept();
      if (!s) co_return;
      multishot_receiver rx(*s, pool);
      for (;;) {
        auto chunk = co_await rx.next();
        if (!chunk || chunk->empty()) co_return;
        auto w = co_await s->send_all(chunk->bytes());
        if (!w) co_return;
      }
    }(l, pool));
    long n = co_await client(at, 1000, 10'000, 128);
    co_await server.join();
    co_return n;
  }(l, at));
  EXPECT_EQ(allocs, 0);
}

// The same echo over a direct descriptor (a slot of the ring's file table on io_uring;
// the option is ignored, normal descriptors, on the other backends): a single recv per
// message, then a multishot receiver.
TEST_P(ZeroAllocation, DirectDescriptorEchoAllocatesNothing) {
  io_context direct_ctx(io_context_options{.backend = GetParam(), .quiet = true, .direct_descriptors = 16});
  for (bool multishot : {false, true}) {
    auto l = listen_loopback({.direct_descriptors = true});
    auto at = address_of(l);
    long allocs = sync_wait(direct_ctx, [](stream_listener& l, socket_address at, bool multishot) -> task<long> {
      buffer_pool pool(*io_context::current(), 64, 4096);
      scope server;
      server.spawn([](stream_listener& l, buffer_pool& pool, bool multishot) -> task<void> {
        auto s = co_await l.accept();
        if (!s) co_return;
        EXPECT_EQ(s->is_direct(), io_context::current()->direct_table_size() != 0);
        if (!multishot) {
          co_await echo_one(std::move(*s));
          co_return;
        }
        multishot_receiver rx(*s, pool);
        for (;;) {
          auto chunk = co_await rx.next();
          if (!chunk || chunk->empty()) co_return;
          auto w = co_await s->send_all(chunk->bytes());
          if (!w) co_return;
        }
      }(l, pool, multishot));
      long n = co_await client(at, 1000, 10'000, 128);
      co_await server.join();
      co_return n;
    }(l, at, multishot));
    EXPECT_EQ(allocs, 0) << (multishot ? "multishot receiver" : "single recv");
  }
}

// Bundles (64-byte buffers: every 128-byte message spans two) and incremental slices
// (4 KiB buffers shared by 32 messages), with batches sent back by one gathered send.
TEST_P(ZeroAllocation, BundlesAndIncrementalBuffersAllocateNothing) {
  struct config {
    buffer_pool_options opts;
    std::size_t buffer_size;
  };
  for (config c :
       {config{{.bundle = true, .incremental = false}, 64}, config{{.bundle = true, .incremental = true}, 4096},
        config{{.bundle = false, .incremental = true}, 4096}}) {
    SCOPED_TRACE(std::to_string(c.buffer_size) + (c.opts.incremental ? " incremental" : " bundle"));
    auto l = listen_loopback();
    auto at = address_of(l);
    long allocs = run([](stream_listener& l, socket_address at, config c) -> task<long> {
      buffer_pool pool(*io_context::current(), 64, c.buffer_size, c.opts);
      scope server;
      server.spawn([](stream_listener& l, buffer_pool& pool) -> task<void> {
        auto s = co_await l.accept();
        if (!s) co_return;
        co_await batched_echo(*s, pool);
      }(l, pool));
      long n = co_await client(at, 1000, 10'000, 128);
      co_await server.join();
      co_return n;
    }(l, at, c));
    EXPECT_EQ(allocs, 0);
  }
}

TEST_P(ZeroAllocation, BufferedLinesAndGatherWritesAllocateNothing) {
  auto l = listen_loopback();
  auto at = address_of(l);
  long allocs = run([](stream_listener& l, socket_address at) -> task<long> {
    scope server;
    server.spawn([](stream_listener& l) -> task<void> {
      auto s = co_await l.accept();
      if (!s) co_return;
      buffered_stream in(*s);
      for (;;) {
        auto line = co_await in.read_line();
        if (!line) co_return;
        std::array<const_buffer, 3> reply{const_buffer(std::string_view("echo: ")), const_buffer(*line),
                                          const_buffer(std::string_view("\n"))};
        auto w = co_await s->send_all(reply);
        if (!w) co_return;
      }
    }(l));
    auto c = co_await stream_socket::connect(at);
    EXPECT_TRUE(c);
    buffered_stream in(*c);
    long during = 0;
    for (int i = 0; i < 3000; ++i) {
      if (i == 1000) {
        allocations = 0;
        counting = true;
      }
      std::array<const_buffer, 2> request{const_buffer(std::string_view("hello world")),
                                          const_buffer(std::string_view("\r\n"))};
      auto w = co_await c->send_all(request);
      auto reply = co_await in.read_line();
      if (!w || !reply || *reply != "echo: hello world") {
        ADD_FAILURE() << "round trip " << i << " failed";
        break;
      }
    }
    counting = false;
    during = allocations.load();
    c = unexpected(std::errc::not_connected);  // closes the client: the server ends
    co_await server.join();
    co_return during;
  }(l, at));
  EXPECT_EQ(allocs, 0);
}

// A batching_writer fed shared messages: queueing, the gathered sends and the waits of
// its loop allocate nothing once its queue has grown.
TEST_P(ZeroAllocation, BatchingWriterAllocatesNothingPerMessage) {
  socket_pair p;
  long allocs = run([](socket_pair& p) -> task<long> {
    auto message = std::make_shared<const std::string>("a line of the room\n");
    batching_writer<std::shared_ptr<const std::string>> out(p.a, {.max_messages = 64});
    scope sender;
    sender.spawn(
        [](batching_writer<std::shared_ptr<const std::string>>& w) -> task<void> { (void)co_await w.run(); }(out));
    std::array<char, 4096> buf;
    for (int i = 0; i < 3000; ++i) {
      if (i == 1000) {
        allocations = 0;
        counting = true;
      }
      for (int k = 0; k < 10; ++k) EXPECT_TRUE(out.try_write(message));
      for (std::size_t want = 10 * message->size(); want > 0;) {
        auto n = co_await p.b.recv(std::span(buf).first(want));
        if (!n || *n == 0) {
          ADD_FAILURE() << "receive " << i << " failed";
          co_return -1;
        }
        want -= *n;
      }
    }
    counting = false;
    const long during = allocations.load();
    out.close();
    co_await sender.join();
    co_return during;
  }(p));
  EXPECT_EQ(allocs, 0);
}

TEST_P(ZeroAllocation, DeadlineResetsAllocateNothing) {
  // An idle timeout pushed on every step, moved earlier now and then (a wake-up and a
  // re-arm of the waiter), and outlived by the waiter's first armed time (lazy re-arm).
  // The deadline stays 40-50 ms ahead of steps 100 us apart, so it passes only when the
  // loop's thread does not run for 40 ms (a loaded machine; a full ASan+UBSan run once
  // saw it pass with 2-3 ms margins): that is reported as such, not as a failure.
  struct outcome {
    long allocations = 0;
    bool passed = false;
    std::chrono::steady_clock::duration longest_step{};
  };
  static constexpr auto margin = std::chrono::milliseconds(40);
  const outcome o = run([]() -> task<outcome> {
    outcome o;
    deadline idle;
    idle.extend(margin + std::chrono::milliseconds(10));
    scope waiter;
    waiter.spawn(
        [](deadline& d, bool& passed) -> task<void> { passed = static_cast<bool>(co_await d.wait()); }(idle, o.passed));
    auto last = std::chrono::steady_clock::now();
    for (int i = 0; i < 1500; ++i) {
      if (i == 500) {
        allocations = 0;
        counting = true;
      }
      if (i % 7 == 0) idle.reset(std::chrono::steady_clock::now() + margin);
      else idle.extend(margin + std::chrono::milliseconds(10));
      auto slept = co_await sleep_for(std::chrono::microseconds(100));
      if (!slept) break;
      const auto now = std::chrono::steady_clock::now();
      o.longest_step = std::max(o.longest_step, now - last);
      last = now;
    }
    counting = false;
    o.allocations = allocations.load();
    idle.cancel();
    co_await waiter.join();
    co_return o;
  }());
  const auto longest_ms = std::chrono::duration_cast<std::chrono::milliseconds>(o.longest_step).count();
  if (o.passed && o.longest_step >= margin)
    GTEST_SKIP() << "the loop's thread did not run for " << longest_ms << " ms (a loaded machine): the deadline passed";
  EXPECT_FALSE(o.passed) << "the deadline passed although it was always pushed back (longest step " << longest_ms
                         << " ms)";
  EXPECT_EQ(o.allocations, 0);
}

TEST_P(ZeroAllocation, CopyBidirectionalAllocatesNothingPerChunk) {
  // client <-> proxy (copy_bidirectional, idle timeout on) <-> echo server
  socket_pair front, back;
  long allocs = run([](socket_pair& front, socket_pair& back) -> task<long> {
    scope running;
    running.spawn([](socket_pair& front, socket_pair& back) -> task<void> {
      auto r = co_await copy_bidirectional(front.b, back.a, copy_options{.idle_timeout = std::chrono::seconds(30)});
      EXPECT_TRUE(r && r->ok());
    }(front, back));
    running.spawn(echo_one(std::move(back.b)));
    std::array<std::byte, 256> out{}, in{};
    long during = 0;
    for (int i = 0; i < 3000; ++i) {
      if (i == 1000) {
        allocations = 0;
        counting = true;
      }
      auto w = co_await front.a.send_all(out);
      auto r = co_await front.a.recv_exact(in);
      if (!w || !r || *r != in.size()) {
        ADD_FAILURE() << "round trip " << i << " failed";
        break;
      }
    }
    counting = false;
    during = allocations.load();
    ::shutdown(front.a.native_handle(), SHUT_WR);  // the proxy passes it on; the echo ends
    co_await running.join();
    co_return during;
  }(front, back));
  EXPECT_EQ(allocs, 0);
}

// Fibers: a blocking-style echo server fiber and client fiber; after a warm-up, the
// round trips (each two context switches per side, plus the operations) allocate nothing.
TEST_P(ZeroAllocation, FiberEchoRoundTripsAllocateNothing) {
  auto l = listen_loopback();
  auto at = address_of(l);
  long allocs = run([](stream_listener& l, socket_address at) -> task<long> {
    scope server;
    spawn_fiber(server, [&l] {
      auto s = this_fiber::await(l.accept());
      EXPECT_TRUE(s);
      if (!s) return;
      std::array<std::byte, 4096> buf;
      for (;;) {
        auto n = this_fiber::await(s->recv(buf));
        if (!n || *n == 0) return;
        auto w = this_fiber::await(s->send_all(std::span(buf).first(*n)));
        if (!w) return;
      }
    });
    long during = co_await fiber([at] {
      auto s = this_fiber::await(stream_socket::connect(at));
      EXPECT_TRUE(s);
      std::array<std::byte, 128> out{}, in{};
      int completed = 0;
      for (int i = 0; i < 11'000; ++i) {
        if (i == 1000) {
          allocations = 0;
          counting = true;
        }
        auto w = this_fiber::await(s->send_all(out));
        auto r = this_fiber::await(s->recv_exact(in));
        if (!w || !r) break;
        if (i >= 1000) ++completed;
      }
      counting = false;
      EXPECT_EQ(completed, 10'000);
      return allocations.load();
    });
    co_await server.join();
    co_return during;
  }(l, at));
  EXPECT_EQ(allocs, 0) << "allocations during 10,000 fiber round trips";
}

// A 4-slot channel between two tasks: the sender waits while it is full and the
// receiver while it is empty, thousands of times, without allocating.
TEST_P(ZeroAllocation, ChannelWaitsOnBothSidesAllocateNothing) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each receive() allocates its frame";
#endif
  channel<long> ch(4);
  long allocs = run([](channel<long>& ch) -> task<long> {
    auto sender = [](channel<long>& ch) -> task<void> {
      for (long i = 0; i < 20'000; ++i) {
        auto s = co_await ch.send(i);
        if (!s) co_return;
        if (i % 7 == 0) co_await yield();  // the receiver empties it and waits too
      }
    };
    auto receiver = [](channel<long>& ch, long& waits_seen) -> task<void> {
      for (long i = 0; i < 20'000; ++i) {
        if (i == 2'000) {
          allocations = 0;
          counting = true;
        }
        if (ch.size() == 0) ++waits_seen;
        auto v = co_await ch.receive();
        EXPECT_EQ(v.value_or(-1), i);
        if (!v) break;
      }
      counting = false;
    };
    long waits_seen = 0;
    co_await when_all(sender(ch), receiver(ch, waits_seen));
    EXPECT_GT(waits_seen, 1000);
    co_return allocations.load();
  }(ch));
  EXPECT_EQ(allocs, 0);
}

// Four tasks contend for a mutex (each waits in its queue) and a semaphore.
TEST_P(ZeroAllocation, ContendedMutexAndSemaphoreAllocateNothing) {
  long allocs = run([]() -> task<long> {
    mutex m;
    semaphore sem(2);
    long total = 0;
    auto worker = [](mutex& m, semaphore& sem, long& total) -> task<void> {
      for (int i = 0; i < 5'000; ++i) {
        auto g = co_await m.lock();
        if (!g) co_return;
        co_await yield();  // the others queue up meanwhile
        ++total;
        g->unlock();
        auto a = co_await sem.acquire();
        if (!a) co_return;
        co_await yield();
        sem.release();
      }
    };
    scope sc;
    for (int i = 0; i < 4; ++i) sc.spawn(worker(m, sem, total));
    allocations = 0;
    counting = true;
    co_await sc.join();
    counting = false;
    EXPECT_EQ(total, 20'000);
    co_return allocations.load();
  }());
  EXPECT_EQ(allocs, 0);
}

// Broadcast of shared messages to three receivers that wait for each one.
TEST_P(ZeroAllocation, BroadcastSendAndReceiveAllocateNothing) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each receive() allocates its frame";
#endif
  long allocs = run([]() -> task<long> {
    broadcast<std::shared_ptr<const int>> b(16);
    auto message = std::make_shared<const int>(42);
    long received = 0;
    auto reader = [](broadcast<std::shared_ptr<const int>>::receiver r, long& received) -> task<void> {
      for (;;) {
        auto v = co_await r.receive();
        if (!v) co_return;
        received += **v;
      }
    };
    scope sc;
    for (int i = 0; i < 3; ++i) sc.spawn(reader(b.subscribe(), received));
    for (int i = 0; i < 20'000; ++i) {
      if (i == 2'000) {
        allocations = 0;
        counting = true;
      }
      auto s = b.send(message);
      if (!s) break;
      co_await yield();
    }
    counting = false;
    const long during = allocations.load();
    b.close();
    co_await sc.join();
    EXPECT_EQ(received, 3L * 20'000 * 42);
    co_return during;
  }());
  EXPECT_EQ(allocs, 0);
}

// File operations: the readiness backends send writes and syncs to the blocking pool
// (the job lives in the operation) and make cached reads on the loop. The pool starts
// its threads on demand (one allocation each, once): all of them are started first.
TEST_P(ZeroAllocation, FileOperationsAllocateNothing) {
  std::string p = ::testing::TempDir() + "ringio-fileops-alloc-" + std::to_string(::getpid());
  long allocs = run([](std::string p) -> task<long> {
    auto nap = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
    auto n1 = spawn_blocking(nap), n2 = spawn_blocking(nap), n3 = spawn_blocking(nap), n4 = spawn_blocking(nap);
    (void)co_await when_all(std::move(n1), std::move(n2), std::move(n3), std::move(n4));
    auto f = co_await fs::open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return -1;
    std::array<std::byte, 512> out{}, in{};
    iovec vec{in.data(), in.size()};
    long during = -1;
    for (int i = 0; i < 600; ++i) {
      if (i == 200) {
        allocations = 0;
        counting = true;
      }
      const auto offset = static_cast<std::uint64_t>(i % 8) * out.size();
      auto w = co_await f->write_at(out, offset);
      auto r = co_await with_timeout(f->read_at(in, offset), std::chrono::seconds(5));
      auto v = co_await f->read_at(std::span<const iovec>(&vec, 1), offset);
      auto s = co_await with_timeout(f->sync_data(), std::chrono::seconds(5));
      if (!w || !r || !v || !s) {
        ADD_FAILURE() << "file operation " << i << " failed";
        break;
      }
    }
    counting = false;
    during = allocations.load();
    co_return during;
  }(p));
  ::unlink(p.c_str());
  EXPECT_EQ(allocs, 0);
}

// ringio::any_opcode: the SQE lives in the operation, the operation in the frame or in
// the sender's operation state. Off io_uring every request is refused, at no cost
// either.
TEST_P(ZeroAllocation, AnyOpcodeAllocatesNothing) {
  namespace ex = ringio::exec;
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const bool uring = GetParam() == backend_kind::uring;
  std::array<std::byte, 64> buf{};
  auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
  auto read = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fds[0], buf.data(), buf.size(), ~__u64{0}); };
  long allocs = run([](auto& nop, auto& read, int wr, bool uring) -> task<long> {
    for (int i = 0; i < 3000; ++i) {
      if (i == 1000) {
        allocations = 0;
        counting = true;
      }
      const char byte = 'x';
      if (::write(wr, &byte, 1) != 1) break;
      auto a = co_await any_opcode(nop);
      auto b = co_await with_timeout(any_opcode(read), std::chrono::seconds(5));
      if (uring ? (!a || !b || *b != 1) : (a || b)) {
        ADD_FAILURE() << "request " << i << " gave the wrong result";
        break;
      }
    }
    counting = false;
    co_return allocations.load();
  }(nop, read, fds[1], uring));
  EXPECT_EQ(allocs, 0) << "allocations during 2,000 awaited requests";
  if (uring) {
    int rounds = 0, failures = 0;
    auto as_size = [](int res) noexcept { return static_cast<std::size_t>(res); };
    auto loop = ex::repeat_until([&] {
      if (rounds == 1000) {
        allocations = 0;
        counting = true;
      }
      const char byte = 'x';
      if (::write(fds[1], &byte, 1) != 1) ++failures;
      return ex::when_all(ex::any_opcode(nop), ex::any_opcode(read, as_size)) | ex::then([&](int n, std::size_t got) {
               if (n != 0 || got != 1) ++failures;
               return ++rounds == 3000;
             });
    });
    auto done = ex::sync_wait(ctx(), std::move(loop));
    counting = false;
    EXPECT_TRUE(done);
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(allocations.load(), 0) << "allocations during 2,000 sender rounds";
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

RINGIO_ALL_BACKENDS(ZeroAllocation);

// 3,000 round trips of `block` bytes (send, then receive all of it back); returns the
// allocations of the last 2,000, then closes the connection.
task<long> block_round_trips(socket_address to, std::size_t block) {
  auto c = co_await stream_socket::connect(to);
  EXPECT_TRUE(c);
  if (!c) co_return -1;
  std::vector<std::byte> out(block), in(block);
  int completed = 0;
  for (int i = 0; i < 3000; ++i) {
    if (i == 1000) {
      allocations = 0;
      counting = true;
    }
    auto w = co_await c->send_all(out);
    auto r = co_await c->recv_exact(in);
    if (!w || !r || *r != block) break;
    ++completed;
  }
  counting = false;
  const long during = allocations.load();
  EXPECT_EQ(completed, 3000);
  co_return during;
}

// Zero-copy sends (every block is over the threshold) and min-wait batching on: the
// notification CQEs and the raw enter allocate nothing either.
class ZeroAllocationZeroCopyMinWait : public ::testing::TestWithParam<backend_kind> {
 protected:
  void SetUp() override {
    try {
      ctx_.emplace(
          io_context_options{.backend = GetParam(), .quiet = true, .zero_copy_send_threshold = 4096, .min_wait = 50});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here: " << e.what();
    }
  }
  std::optional<io_context> ctx_;
};

TEST_P(ZeroAllocationZeroCopyMinWait, EchoOfLargeBlocksAllocatesNothing) {
  auto l = listen_loopback();
  auto at = address_of(l);
  long allocs = sync_wait(*ctx_, [](stream_listener& l, socket_address at) -> task<long> {
    constexpr std::size_t block = 16 * 1024;
    scope server;
    server.spawn([](stream_listener& l) -> task<void> {
      auto s = co_await l.accept();
      if (!s) co_return;
      std::vector<std::byte> buf(block);
      for (;;) {
        auto n = co_await s->recv_exact(buf);
        if (!n || *n < block) co_return;
        auto w = co_await s->send_all(buf);
        if (!w) co_return;
      }
    }(l));
    long during = co_await block_round_trips(at, block);  // closes the client: the server ends
    co_await server.join();
    co_return during;
  }(l, at));
  EXPECT_EQ(allocs, 0);
  if (ctx_->describe().find("zero-copy") != std::string::npos) {
    EXPECT_GT(ctx_->stats().zero_copy_sends, 2000u);
  }
}

// Every fast-path option at once: direct descriptors, receive bundles with incremental
// buffers, zero-copy sends of the gathered replies and min-wait batching.
TEST_P(ZeroAllocationZeroCopyMinWait, EveryFastPathOptionAtOnceAllocatesNothing) {
  std::optional<io_context> all;
  try {
    all.emplace(io_context_options{.backend = GetParam(),
                                   .quiet = true,
                                   .direct_descriptors = 16,
                                   .zero_copy_send_threshold = 4096,
                                   .min_wait = 50});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here: " << e.what();
  }
  auto l = listen_loopback({.direct_descriptors = true});
  auto at = address_of(l);
  long allocs = sync_wait(*all, [](stream_listener& l, socket_address at) -> task<long> {
    constexpr std::size_t block = 16 * 1024;
    buffer_pool pool(*io_context::current(), 64, 64 * 1024, {.bundle = true, .incremental = true});
    scope server;
    server.spawn([](stream_listener& l, buffer_pool& pool) -> task<void> {
      auto s = co_await l.accept();
      if (!s) co_return;
      EXPECT_EQ(s->is_direct(), io_context::current()->direct_table_size() != 0);
      co_await batched_echo(*s, pool);
    }(l, pool));
    const long during = co_await block_round_trips(at, block);
    co_await server.join();
    co_return during;
  }(l, at));
  EXPECT_EQ(allocs, 0);
}

RINGIO_ALL_BACKENDS(ZeroAllocationZeroCopyMinWait);

}  // namespace

// A log line below the threshold costs no allocation (nor formatting); one above it,
// with a handler set, allocates nothing either (stack buffer, string_view).
TEST(LogAllocation, FilteredAndDeliveredLinesAllocateNothing) {
  int delivered = 0;
  set_log_handler([&delivered](log_level, std::string_view) { ++delivered; });
  set_log_level(log_level::warning);
  allocations = 0;
  counting = true;
  for (int i = 0; i < 1000; ++i) log(log_level::info, "filtered %d %s", i, "text");
  for (int i = 0; i < 1000; ++i) log(log_level::error, "delivered %d %s", i, "text");
  counting = false;
  long during = allocations.load();
  set_log_handler({});
  set_log_level(log_level::info);
  EXPECT_EQ(during, 0);
  EXPECT_EQ(delivered, 1000);
}
