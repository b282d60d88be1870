// SPDX-License-Identifier: Apache-2.0
// Fibers: blocking-style I/O from stackful fibers on every backend, interop with tasks,
// exceptions, cancellation, many fibers, the stack pool, shutdown and the guard page.
#include "ringio/fiber.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/sanitizer.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// Sanitizer builds have larger frames: small stacks get some more room there.
#if defined(__SANITIZE_THREAD__)
constexpr bool under_tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool under_tsan = true;
#else
constexpr bool under_tsan = false;
#endif
#else
constexpr bool under_tsan = false;
#endif

constexpr std::size_t small_stack = under_sanitizer ? 64 * 1024 : 16 * 1024;

// Blocking-style echo: what a fiber per connection looks like.
void fiber_echo(stream_socket& s) {
  std::array<std::byte, 1024> buf;
  for (;;) {
    auto n = this_fiber::await(s.recv(buf));
    if (!n || *n == 0) return;
    auto w = this_fiber::await(s.send_all(std::span(buf).first(*n)));
    if (!w) return;
  }
}

// A few levels of ordinary calls between the fiber's entry and the wait.
std::size_t deep_recv_exact(stream_socket& s, std::span<std::byte> out, int depth) {
  if (depth > 0) return deep_recv_exact(s, out, depth - 1);
  auto r = this_fiber::await(s.recv_exact(out));
  return r ? *r : 0;
}

class Fiber : public backend_test {};

TEST_P(Fiber, EchoOverSocketpair) {
  socket_pair p;
  std::size_t echoed = run([](socket_pair& p) -> task<std::size_t> {
    scope s;
    spawn_fiber(s, [&p] { fiber_echo(p.b); });
    std::size_t got = co_await fiber([&p] {
      std::size_t total = 0;
      for (int i = 0; i < 200; ++i) {
        std::string msg = "message " + std::to_string(i);
        auto w = this_fiber::await(p.a.send_all(std::as_bytes(std::span(msg))));
        EXPECT_TRUE(w);
        std::vector<std::byte> in(msg.size());
        total += deep_recv_exact(p.a, in, 20);
        EXPECT_EQ(std::memcmp(in.data(), msg.data(), msg.size()), 0);
      }
      auto sh = this_fiber::await(p.a.shutdown());
      EXPECT_TRUE(sh);
      return total;
    });
    co_await s.join();
    co_return got;
  }(p));
  std::size_t expected = 0;
  for (int i = 0; i < 200; ++i) expected += ("message " + std::to_string(i)).size();
  EXPECT_EQ(echoed, expected);
}

TEST_P(Fiber, EchoOverTcpWithAcceptAndConnect) {
  auto l = listen_loopback();
  auto at = address_of(l);
  auto payload = random_bytes(64 * 1024, 7);
  bool same = run([](stream_listener& l, socket_address at, std::vector<std::byte>& payload) -> task<bool> {
    scope s;
    spawn_fiber(s, [&l] {
      auto c = this_fiber::await(l.accept());
      EXPECT_TRUE(c);
      if (c) fiber_echo(*c);
    });
    bool ok = co_await fiber([&] {
      auto c = this_fiber::await(stream_socket::connect(at));
      EXPECT_TRUE(c);
      if (!c) return false;
      std::vector<std::byte> back(payload.size());
      // Send in pieces and read each back, so that neither side's buffer fills up.
      for (std::size_t off = 0; off < payload.size(); off += 4096) {
        auto w = this_fiber::await(c->send_all(std::span(payload).subspan(off, 4096)));
        auto r = this_fiber::await(c->recv_exact(std::span(back).subspan(off, 4096)));
        if (!w || !r) return false;
      }
      return back == payload;
    });
    co_await s.join();
    co_return ok;
  }(l, at, payload));
  EXPECT_TRUE(same);
}

// The same exchange through the POSIX-like names of blocking_io.hpp, plus a file.
TEST_P(Fiber, BlockingStyleNamesDoWhatTheirOperationsDo) {
  auto l = listen_loopback();
  auto at = address_of(l);
  auto payload = random_bytes(32 * 1024, 11);
  std::string path = ::testing::TempDir() + "ringio_fiber_names_" + std::to_string(::getpid());
  bool same = run([](stream_listener& l, socket_address at, std::vector<std::byte>& payload,
                     const std::string& path) -> task<bool> {
    scope s;
    spawn_fiber(s, [&l] {
      auto c = this_fiber::accept(l);
      EXPECT_TRUE(c);
      std::array<std::byte, 1024> buf;
      while (c) {
        auto n = this_fiber::recv(*c, buf);
        if (!n || *n == 0) break;
        auto w = this_fiber::send_all(*c, std::span(buf).first(*n));
        if (!w) break;
      }
    });
    bool ok = co_await fiber([&] {
      auto c = this_fiber::connect(at);
      EXPECT_TRUE(c);
      if (!c) return false;
      std::vector<std::byte> back(payload.size());
      for (std::size_t off = 0; off < payload.size(); off += 4096) {
        auto w = this_fiber::send(*c, std::span(payload).subspan(off, 4096));
        if (!w || *w == 0) return false;
        if (*w < 4096) {
          auto rest = this_fiber::send_all(*c, std::span(payload).subspan(off + *w, 4096 - *w));
          if (!rest) return false;
        }
        auto r = this_fiber::recv_exact(*c, std::span(back).subspan(off, 4096));
        if (!r || *r != 4096) return false;
      }
      auto f = file::open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
      if (!f) return false;
      auto w = this_fiber::write_at(*f, back, 0);
      std::vector<std::byte> again(back.size());
      auto r = this_fiber::read_at(*f, again, 0);
      EXPECT_TRUE(w && r);
      return w && r && *w == back.size() && *r == again.size() && back == payload && again == payload;
    });
    co_await s.join();
    co_return ok;
  }(l, at, payload, path));
  ::unlink(path.c_str());
  EXPECT_TRUE(same);
}

// A stop reaches a wait made through the blocking-style names like any other.
TEST_P(Fiber, BlockingStyleRecvObeysTheFibersStop) {
  socket_pair p;
  std::error_code got;
  run([](stream_socket& a, std::error_code& got) -> task<void> {
    scope s;
    spawn_fiber(s, [&a, &got] {
      std::array<std::byte, 16> buf;
      auto n = this_fiber::recv(a, buf);
      if (!n) got = n.error();
    });
    (void)co_await sleep_for(5ms);
    s.request_stop();
    co_await s.join();
  }(p.a, got));
  EXPECT_EQ(got, std::errc::operation_canceled);
}

TEST_P(Fiber, FileWriteAndReadBack) {
  std::string path = ::testing::TempDir() + "ringio_fiber_file_" + std::to_string(::getpid());
  auto data = random_bytes(100'000, 3);
  bool same = run(fiber([&] {
    auto f = file::open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_TRUE(f);
    if (!f) return false;
    for (std::size_t off = 0; off < data.size();) {
      auto w = this_fiber::await(f->write_at(std::span(data).subspan(off), off));
      if (!w || *w == 0) return false;
      off += *w;
    }
    std::vector<std::byte> back(data.size());
    for (std::size_t off = 0; off < back.size();) {
      auto r = this_fiber::await(f->read_at(std::span(back).subspan(off), off));
      if (!r || *r == 0) return false;
      off += *r;
    }
    auto c = this_fiber::await(f->close());
    EXPECT_TRUE(c);
    return back == data;
  }));
  ::unlink(path.c_str());
  EXPECT_TRUE(same);
}

task<int> add_later(int a, int b) {
  auto r = co_await sleep_for(1ms);
  EXPECT_TRUE(r);
  co_return a + b;
}

TEST_P(Fiber, TaskAwaitsFiberAndFiberAwaitsTask) {
  int v = run([]() -> task<int> {
    int inner = co_await fiber([] {
      int x = this_fiber::await(add_later(20, 1));
      int y = this_fiber::await(add_later(x, 21));
      return y;
    });
    co_return inner;
  }());
  EXPECT_EQ(v, 42);
}

TEST_P(Fiber, FibersAwaitCombinatorsAndOtherFibers) {
  int v = run([]() -> task<int> {
    int sum = co_await fiber([] {
      auto [a, b] = this_fiber::await(when_all(add_later(1, 2), fiber([] { return 4; })));
      auto winner = this_fiber::await(when_any(add_later(10, 0), []() -> task<int> {
        (void)co_await sleep_for(10s);
        co_return -1;
      }()));
      int w = winner.index() == 0 ? std::get<0>(winner) : std::get<1>(winner) + 1000;
      return a + b + w;
    });
    co_return sum;
  }());
  EXPECT_EQ(v, 1 + 2 + 4 + 10);
}

// A user type made awaitable by a free operator co_await, resumed through the loop.
struct later_value {
  int v;
};
struct later_value_awaiter {
  int v;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const { io_context::current()->schedule(h); }
  int await_resume() const noexcept { return v; }
};
later_value_awaiter operator co_await(later_value x) noexcept { return {x.v}; }

TEST_P(Fiber, AwaitsUserAwaitablesWithAFreeCoAwait) {
  int v = run(fiber([] {
    int a = this_fiber::await(later_value{3});
    later_value b{4};
    return a + this_fiber::await(b);
  }));
  EXPECT_EQ(v, 7);
}

TEST_P(Fiber, LosingFiberOfWhenAnyIsStoppedAndAwaited) {
  auto start = std::chrono::steady_clock::now();
  std::error_code loser_saw;
  auto winner = run([](std::error_code& loser_saw) -> task<std::size_t> {
    auto r = co_await when_any(fiber([&loser_saw] {
                                 auto z = this_fiber::sleep_for(10s);
                                 loser_saw = z ? std::error_code{} : z.error();
                                 return 1;
                               }),
                               add_later(1, 1));
    co_return r.index();
  }(loser_saw));
  EXPECT_EQ(winner, 1u);
  EXPECT_EQ(loser_saw, std::errc::operation_canceled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_P(Fiber, ExceptionsPropagateBothWays) {
  std::string seen = run([]() -> task<std::string> {
    std::string out;
    try {
      (void)co_await fiber([]() -> int { throw std::runtime_error("from fiber"); });
    } catch (const std::runtime_error& e) {
      out += e.what();
    }
    out += "|";
    std::string from_task = co_await fiber([] {
      std::string caught;
      try {
        this_fiber::await([]() -> task<void> {
          (void)co_await sleep_for(1ms);
          throw std::logic_error("from task");
        }());
      } catch (const std::logic_error& e) {
        // Suspending inside a catch block: the exception stays current afterwards.
        this_fiber::sleep_for(1ms).value();
        caught = e.what();
        EXPECT_TRUE(std::current_exception() != nullptr);
      }
      return caught;
    });
    out += from_task;
    co_return out;
  }());
  EXPECT_EQ(seen, "from fiber|from task");
}

TEST_P(Fiber, CatchBlocksOfTwoFibersInterleaveSafely) {
  int ok = run([]() -> task<int> {
    scope s;
    int good = 0;
    for (int i = 0; i < 2; ++i) {
      spawn_fiber(s, [&good, i] {
        try {
          throw i;
        } catch (int v) {
          for (int k = 0; k < 5; ++k) this_fiber::yield();
          try {
            throw;
          } catch (int again) {
            if (again == v) ++good;
          }
        }
      });
    }
    co_await s.join();
    co_return good;
  }());
  EXPECT_EQ(ok, 2);
}

TEST_P(Fiber, StopCancelsPendingRecvAndSleep) {
  socket_pair p;
  auto r = run([](socket_pair& p) -> task<std::pair<std::error_code, std::error_code>> {
    scope s;
    std::error_code recv_error, sleep_error;
    spawn_fiber(s, [&] {
      std::array<std::byte, 16> buf;
      auto n = this_fiber::await(p.b.recv(buf));
      recv_error = n ? std::error_code{} : n.error();
      EXPECT_TRUE(this_fiber::stop_requested());
    });
    spawn_fiber(s, [&] {
      auto z = this_fiber::sleep_for(1h);
      sleep_error = z ? std::error_code{} : z.error();
    });
    (void)co_await sleep_for(5ms);
    s.request_stop();
    co_await s.join();
    co_return std::pair{recv_error, sleep_error};
  }(p));
  EXPECT_EQ(r.first, std::errc::operation_canceled);
  EXPECT_EQ(r.second, std::errc::operation_canceled);
}

TEST_P(Fiber, CancelledRecvLosesNoData) {
  // The peer streams numbered bytes while the receiving fiber is stopped at a point
  // that moves on each round; what it got plus what is left in the socket is all.
  for (int round = 0; round < 20; ++round) {
    socket_pair p;
    constexpr std::size_t total = 64 * 1024;
    auto sent = random_bytes(total, static_cast<std::uint64_t>(round));
    std::vector<std::byte> got;
    run([](socket_pair& p, std::vector<std::byte>& sent, std::vector<std::byte>& got, int round) -> task<void> {
      scope s;
      spawn_fiber(s, [&] {
        std::array<std::byte, 3000> buf;
        for (;;) {
          auto n = this_fiber::await(p.b.recv(buf));
          if (!n || *n == 0) return;
          got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
        }
      });
      for (std::size_t off = 0; off < sent.size(); off += 1024) {
        auto w = co_await p.a.send_all(std::span(sent).subspan(off, 1024));
        EXPECT_TRUE(w);
        if (off / 1024 == static_cast<std::size_t>(round)) s.request_stop();
        if (off % 4096 == 0) co_await yield();
      }
      co_await s.join();
      (void)co_await p.a.shutdown();
      std::array<std::byte, 4096> buf;
      for (;;) {  // what the stopped fiber did not take is still in the socket
        auto n = co_await p.b.recv(buf);
        if (!n || *n == 0) break;
        got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
      }
    }(p, sent, got, round));
    EXPECT_EQ(got, sent) << "round " << round;
  }
}

TEST_P(Fiber, StopBeforeFirstOperationSendsNothing) {
  socket_pair p;
  auto r = run([](socket_pair& p) -> task<std::string> {
    (void)co_await p.a.send_all(std::as_bytes(std::span("kept", 4)));
    scope s;
    s.request_stop();
    std::error_code e;
    spawn_fiber(s, [&] {
      EXPECT_TRUE(this_fiber::stop_requested());
      std::array<std::byte, 16> buf;
      auto n = this_fiber::await(p.b.recv(buf));
      e = n ? std::error_code{} : n.error();
    });
    co_await s.join();
    EXPECT_EQ(e, std::errc::operation_canceled);
    std::array<char, 16> buf{};
    auto n = co_await p.b.recv(std::as_writable_bytes(std::span(buf)));
    co_return n ? std::string(buf.data(), *n) : std::string("error");
  }(p));
  EXPECT_EQ(r, "kept");
}

TEST_P(Fiber, TenThousandFibersOnSmallStacks) {
  // TSan keeps a large state per fiber: 10,000 of them exhaust its allocator.
  constexpr int count = under_tsan ? 500 : 10'000;
  int done = run([]() -> task<int> {
    scope s;
    int finished = 0;
    for (int i = 0; i < count; ++i) {
      spawn_fiber(
          s,
          [&finished, i] {
            this_fiber::yield();
            auto z = this_fiber::sleep_for(std::chrono::microseconds(i % 500));
            EXPECT_TRUE(z);
            ++finished;
          },
          fiber_options{.stack_size = small_stack});
    }
    EXPECT_EQ(s.size(), static_cast<std::size_t>(count));
    co_await s.join();
    co_return finished;
  }());
  EXPECT_EQ(done, count);
  auto st = fiber_stack_pool_stats();
  EXPECT_LE(st.pooled, fiber_stack_pool_max_stacks);
  EXPECT_LE(st.pooled_bytes, fiber_stack_pool_max_bytes);
}

TEST_P(Fiber, StacksAreReusedFromThePool) {
  fiber_stack_pool_trim();
  const auto before = fiber_stack_pool_stats();
  EXPECT_EQ(before.pooled, 0u);
  run([]() -> task<void> {
    for (int i = 0; i < 50; ++i)
      (void)co_await fiber([] { this_fiber::yield(); }, fiber_options{.stack_size = 40 * 1024});
  }());
  const auto after = fiber_stack_pool_stats();
  EXPECT_EQ(after.mapped - before.mapped, 1u) << "one stack serves fibers that run one after another";
  EXPECT_EQ(after.reused - before.reused, 49u);
  EXPECT_EQ(after.pooled, 1u);
  fiber_stack_pool_trim();
  EXPECT_EQ(fiber_stack_pool_stats().pooled, 0u);
}

TEST_P(Fiber, ScopeJoinFromTaskAndFromFiber) {
  std::vector<int> order = run([]() -> task<std::vector<int>> {
    std::vector<int> order;
    co_await fiber([&order] {
      scope inner;
      for (int i = 3; i > 0; --i)
        spawn_fiber(inner, [&order, i] {
          // 10 ms apart: the spawns themselves may be a millisecond apart on a busy machine
          this_fiber::sleep_for(std::chrono::milliseconds(10 * i)).value();
          order.push_back(i);
        });
      this_fiber::await(inner.join());
      order.push_back(0);
    });
    co_return order;
  }());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 0}));
}

TEST_P(Fiber, ScopeJoinRethrowsAFibersException) {
  bool thrown = run([]() -> task<bool> {
    scope s;
    spawn_fiber(s, [] {
      this_fiber::yield();
      throw std::runtime_error("boom");
    });
    try {
      co_await s.join();
    } catch (const std::runtime_error&) {
      co_return true;
    }
    co_return false;
  }());
  EXPECT_TRUE(thrown);
}

TEST_P(Fiber, ContextDestroyedWithSuspendedFibers) {
  int unwound = 0;
  std::error_code recv_error;
  {
    io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
    socket_pair p;
    struct guard {
      int& n;
      ~guard() { ++n; }
    };
    spawn_fiber(ctx, [&] {
      guard g{unwound};
      std::array<std::byte, 16> buf;
      auto n = this_fiber::await(p.b.recv(buf));
      recv_error = n ? std::error_code{} : n.error();
    });
    spawn_fiber(ctx, [&] {
      guard g{unwound};
      (void)this_fiber::sleep_for(1h);
    });
    sync_wait(ctx, []() -> task<void> { (void)co_await sleep_for(2ms); }());
    EXPECT_EQ(unwound, 0);
  }
  EXPECT_EQ(unwound, 2);
  EXPECT_EQ(recv_error, std::errc::operation_canceled);
}

// An awaitable that never resumes its waiter: the only way out is destruction.
struct never_resumes {
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  void await_resume() const noexcept {}
};

TEST_P(Fiber, DestroyedWhileSuspendedIsUnwound) {
  fiber_stack_pool_trim();
  int destroyed = 0;
  int swallowed = 0;
  run([](int& destroyed, int& swallowed) -> task<void> {
    struct guard {
      int& n;
      ~guard() { ++n; }
    };
    auto t = fiber([&] {
      guard g{destroyed};
      try {
        this_fiber::await(never_resumes{});
      } catch (...) {
        ++swallowed;  // a catch-all that does not rethrow: the next await throws again
      }
      this_fiber::await(never_resumes{});
      ADD_FAILURE() << "resumed after its owner was destroyed";
    });
    t.handle().resume();  // runs until the fiber suspends
    EXPECT_EQ(destroyed, 0);
    t = {};  // destroys the suspended task: the fiber's stack is unwound
    EXPECT_EQ(destroyed, 1);
    co_return;
  }(destroyed, swallowed));
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(swallowed, 1);
  auto st = fiber_stack_pool_stats();
  EXPECT_EQ(st.pooled, 1u) << "the stack went back to the pool";
}

TEST_P(Fiber, StopFromAnotherThreadCancelsTheWait) {
  socket_pair p;
  std::error_code e = run([](socket_pair& p) -> task<std::error_code> {
    scope s;
    std::error_code got;
    spawn_fiber(s, [&] {
      std::array<std::byte, 16> buf;
      auto n = this_fiber::await(p.b.recv(buf));
      got = n ? std::error_code{} : n.error();
    });
    std::thread stopper([&s] {
      std::this_thread::sleep_for(5ms);
      s.request_stop();
    });
    co_await s.join();
    stopper.join();
    co_return got;
  }(p));
  EXPECT_EQ(e, std::errc::operation_canceled);
}

TEST_P(Fiber, FiberStopTokenIsTheScopes) {
  bool linked = run([]() -> task<bool> {
    scope s;
    bool saw = false;
    spawn_fiber(s, [&] {
      auto t = this_fiber::stop_token();
      EXPECT_TRUE(t.stop_possible());
      while (!t.stop_requested()) this_fiber::yield();
      saw = true;
    });
    co_await yield();
    s.request_stop();
    co_await s.join();
    co_return saw;
  }());
  EXPECT_TRUE(linked);
}

TEST_P(Fiber, AwaitOutsideAFiberThrows) {
  EXPECT_FALSE(this_fiber::in_fiber());
  EXPECT_THROW(this_fiber::yield(), std::logic_error);
  bool inside = run(fiber([] { return this_fiber::in_fiber(); }));
  EXPECT_TRUE(inside);
}

RINGIO_ALL_BACKENDS(Fiber);

// A fiber awaiting what completes at once: its driving task goes on without growing
// the stack (at GCC -O0 each await used to nest a resume; test-debug runs this).
TEST(FiberFlatStack, ReadyAwaitsFromAFiber) {
  io_context ctx(io_context_options{.quiet = true});
  event ev;
  ev.set();
  long sum = sync_wait(ctx, fiber([&ev] {
                         long n = 0;
                         for (int i = 0; i < 100'000; ++i) {
                           if (this_fiber::await(ev.wait())) ++n;
                           n += this_fiber::await([]() -> task<int> { co_return 1; }());
                         }
                         return n;
                       }));
  EXPECT_EQ(sum, 200'000);
}

int recurse(int n) {
  volatile char pad[512];
  pad[0] = static_cast<char>(n);
  return n == 0 ? pad[0] : recurse(n - 1) + pad[0];
}

TEST(FiberDeathTest, StackOverflowHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        io_context ctx(io_context_options{.backend = backend_kind::epoll, .quiet = true});
        int v = sync_wait(ctx, fiber([] { return recurse(1'000'000); }, fiber_options{.stack_size = 16 * 1024}));
        std::printf("not reached %d\n", v);
      },
      "");
}

}  // namespace
