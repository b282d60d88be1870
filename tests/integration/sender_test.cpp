// SPDX-License-Identifier: Apache-2.0
// The sender interface (ringio/exec.hpp) on every backend: each operation's sender
// (value, error, stopped), the cancellation rules (stop before start, stop while
// pending, a stop that loses the race), the algorithms (when_all, when_any, let_value,
// repeat_until), the task bridges, and continues_on between loops on two threads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ringio/exec.hpp"
#include "ringio/ringio.hpp"
#include "sender_support.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
namespace ex = ringio::exec;

namespace {

class Senders : public backend_test {};

std::string text_of(const std::array<char, 64>& buf, std::size_t n) { return std::string(buf.data(), n); }

TEST_P(Senders, RecvCompletesWithTheBytes) {
  socket_pair p;
  send_text(p.b.native_handle(), "hello");
  std::array<char, 64> buf{};
  auto r = ex::sync_wait(ctx(), ex::recv(p.a, std::as_writable_bytes(std::span(buf))));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(text_of(buf, std::get<0>(*r)), "hello");
}

TEST_P(Senders, SendToAClosedPeerIsAnError) {
  socket_pair p;
  ::close(p.b.release());
  const std::string data(1000, 'x');
  try {
    (void)ex::sync_wait(ctx(), ex::send_all(p.a, std::as_bytes(std::span(data))));
    ADD_FAILURE() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::broken_pipe) << e.code().message();
  }
}

TEST_P(Senders, StopBeforeStartSendsNothingAndCompletesStopped) {
  socket_pair p;
  send_text(p.b.native_handle(), "kept");
  std::stop_source stop;
  stop.request_stop();
  std::array<char, 64> buf{};
  auto r = ex::sync_wait(ctx(), with_token(ex::recv(p.a, std::as_writable_bytes(std::span(buf))), stop.get_token()));
  EXPECT_FALSE(r.has_value());  // set_stopped
  EXPECT_EQ(ctx().in_flight(), 0u);
  // No receive ran: the bytes are still in the socket for the next one.
  auto again = ex::sync_wait(ctx(), ex::recv(p.a, std::as_writable_bytes(std::span(buf))));
  ASSERT_TRUE(again);
  EXPECT_EQ(text_of(buf, std::get<0>(*again)), "kept");
}

TEST_P(Senders, StopDuringAPendingRecvLosesNoData) {
  socket_pair p;
  std::stop_source stop;
  std::array<char, 64> buf{};
  auto r = ex::sync_wait(
      ctx(), ex::when_all(with_token(ex::recv(p.a, std::as_writable_bytes(std::span(buf))), stop.get_token()),
                          ex::sleep_for(20ms) | ex::then([&] { stop.request_stop(); })));
  EXPECT_FALSE(r.has_value());  // the receive completed with set_stopped
  EXPECT_EQ(ctx().in_flight(), 0u);
  send_text(p.b.native_handle(), "after");
  auto again = ex::sync_wait(ctx(), ex::recv(p.a, std::as_writable_bytes(std::span(buf))));
  ASSERT_TRUE(again);
  EXPECT_EQ(text_of(buf, std::get<0>(*again)), "after");
}

TEST_P(Senders, AStopThatLosesTheRaceDeliversTheRealResult) {
  socket_pair p;
  send_text(p.b.native_handle(), "raced");
  std::stop_source stop;
  std::array<char, 64> buf{};
  // The data is there before the receive starts: it completes (in the kernel, or at
  // once on the readiness backends) before the stop requested right after the start.
  auto r = ex::sync_wait(
      ctx(), ex::when_all(with_token(ex::recv(p.a, std::as_writable_bytes(std::span(buf))), stop.get_token()),
                          ex::just() | ex::then([&] { stop.request_stop(); })));
  if (r) {
    EXPECT_EQ(text_of(buf, std::get<0>(*r)), "raced");
  } else {  // the cancel won: then nothing was consumed
    auto again = ex::sync_wait(ctx(), ex::recv(p.a, std::as_writable_bytes(std::span(buf))));
    ASSERT_TRUE(again);
    EXPECT_EQ(text_of(buf, std::get<0>(*again)), "raced");
  }
}

TEST_P(Senders, WhenAnyOfRecvAndATimerTimesOutThenTheDataWaits) {
  socket_pair p;
  std::array<char, 64> buf{};
  auto start = ringio::now();
  try {
    (void)ex::sync_wait(ctx(),
                        ex::when_any(ex::recv(p.a, std::as_writable_bytes(std::span(buf))), ex::fail_after(30ms)));
    ADD_FAILURE() << "no timeout";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::timed_out);
  }
  EXPECT_GE(ringio::now() - start, 25ms);
  EXPECT_EQ(ctx().in_flight(), 0u);  // the receive was cancelled and waited for
  send_text(p.b.native_handle(), "late");
  auto r =
      ex::sync_wait(ctx(), ex::when_any(ex::recv(p.a, std::as_writable_bytes(std::span(buf))), ex::fail_after(5s)));
  ASSERT_TRUE(r);
  EXPECT_EQ(text_of(buf, std::get<0>(*r)), "late");
  EXPECT_EQ(ctx().in_flight(), 0u);  // the timer was cancelled and waited for
}

TEST_P(Senders, WhenAllSendsAndReceivesTogether) {
  socket_pair p;
  const std::string data(100000, 'q');
  std::vector<char> in(data.size());
  auto r = ex::sync_wait(ctx(), ex::when_all(ex::send_all(p.b, std::as_bytes(std::span(data))),
                                             ex::recv_exact(p.a, std::as_writable_bytes(std::span(in))), ex::just(7)));
  ASSERT_TRUE(r);
  auto [sent, received, seven] = *r;
  EXPECT_EQ(sent, data.size());
  EXPECT_EQ(received, data.size());
  EXPECT_EQ(seven, 7);
  EXPECT_EQ(std::string(in.begin(), in.end()), data);
}

TEST_P(Senders, WhenAllStopsTheOthersOnAnError) {
  socket_pair p, q;
  ::close(q.b.release());
  std::array<char, 64> buf{};
  const std::string data(1000, 'x');
  try {
    (void)ex::sync_wait(ctx(), ex::when_all(ex::recv(p.a, std::as_writable_bytes(std::span(buf))),
                                            ex::send_all(q.a, std::as_bytes(std::span(data)))));
    ADD_FAILURE() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::broken_pipe);
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// An echo server written with senders only: a loop of recv then send_all.
auto echo_loop(stream_socket& s, std::array<char, 256>& buf) {
  return ex::repeat_until([&s, &buf] {
    return ex::recv(s, std::as_writable_bytes(std::span(buf))) | ex::let_value([&s, &buf](std::size_t n) {
             return ex::send_all(s, std::as_bytes(std::span(buf).first(n))) |
                    ex::then([n](std::size_t) { return n == 0; });
           });
  });
}

task<std::size_t> echo_client(stream_socket& s, int rounds) {
  std::size_t total = 0;
  std::array<char, 32> in{};
  for (int i = 0; i < rounds; ++i) {
    std::string msg = "message " + std::to_string(i);
    auto w = co_await ex::send_all(s, std::as_bytes(std::span(msg)));
    EXPECT_TRUE(w);
    auto r = co_await ex::recv_exact(s, std::as_writable_bytes(std::span(in).first(msg.size())));
    EXPECT_TRUE(r);
    if (!r) co_return total;
    EXPECT_EQ(std::string(in.data(), *r), msg);
    total += *r;
  }
  auto closed = co_await ex::shutdown(s);
  EXPECT_TRUE(closed);
  co_return total;
}

TEST_P(Senders, LetValueEchoLoopOverASocketPair) {
  socket_pair p;
  std::array<char, 256> buf{};
  auto r = ex::sync_wait(ctx(), ex::when_all(echo_loop(p.a, buf), ex::from_task(echo_client(p.b, 200))));
  ASSERT_TRUE(r);
  std::size_t expected = 0;
  for (int i = 0; i < 200; ++i) expected += ("message " + std::to_string(i)).size();
  EXPECT_EQ(std::get<0>(*r), expected);
}

TEST_P(Senders, EveryOperationHasASender) {
  auto listener = listen_loopback();
  auto addr = address_of(listener);
  auto accepted = ex::sync_wait(ctx(), ex::when_all(ex::accept(listener), ex::connect_to(addr)));
  ASSERT_TRUE(accepted);
  auto& [server, client] = *accepted;
  EXPECT_TRUE(server.is_open());
  EXPECT_TRUE(client.is_open());
  std::array<char, 64> buf{};
  auto io = ex::sync_wait(ctx(), ex::when_all(ex::send(client, std::as_bytes(std::span("ping", 4))),
                                              ex::recv_exact(server, std::as_writable_bytes(std::span(buf).first(4)))));
  ASSERT_TRUE(io);
  EXPECT_EQ(text_of(buf, 4), "ping");
  EXPECT_TRUE(ex::sync_wait(ctx(), ex::close(client)));
  auto eof = ex::sync_wait(ctx(), ex::recv(server, std::as_writable_bytes(std::span(buf))));
  ASSERT_TRUE(eof);
  EXPECT_EQ(std::get<0>(*eof), 0u);

  // Refused connection: set_error.
  auto free_port = listen_loopback();
  auto closed_addr = address_of(free_port);
  free_port = stream_listener{};
  try {
    (void)ex::sync_wait(ctx(), ex::connect_to(closed_addr));
    ADD_FAILURE() << "connected to a closed port";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::connection_refused);
  }

  // Datagrams.
  auto u1 = udp_socket::bind(socket_address::loopback(0));
  auto u2 = udp_socket::bind(socket_address::loopback(0));
  ASSERT_TRUE(u1 && u2);
  auto to = u2->local_address();
  ASSERT_TRUE(to);
  auto dg = ex::sync_wait(ctx(), ex::when_all(ex::send_to(*u1, std::as_bytes(std::span("dgram", 5)), *to),
                                              ex::recv_from(*u2, std::as_writable_bytes(std::span(buf)))));
  ASSERT_TRUE(dg);
  EXPECT_EQ(std::get<0>(*dg), 5u);
  EXPECT_EQ(std::get<1>(*dg).size, 5u);

  // Files.
  char name[] = "/tmp/ringio-sender-XXXXXX";
  int fd = ::mkstemp(name);
  ASSERT_GE(fd, 0);
  ::close(fd);
  auto f = file::open(name, O_RDWR);
  ::unlink(name);
  ASSERT_TRUE(f);
  auto wrote = ex::sync_wait(ctx(), ex::write_at(*f, std::as_bytes(std::span("filedata", 8)), 0));
  ASSERT_TRUE(wrote);
  EXPECT_EQ(std::get<0>(*wrote), 8u);
  auto read = ex::sync_wait(ctx(), ex::read_at(*f, std::as_writable_bytes(std::span(buf)), 4));
  ASSERT_TRUE(read);
  EXPECT_EQ(text_of(buf, std::get<0>(*read)), "data");

  // Timers, nop, yield, the scheduler.
  auto t0 = ringio::now();
  EXPECT_TRUE(ex::sync_wait(ctx(), ex::sleep_for(10ms)));
  EXPECT_GE(ringio::now() - t0, 9ms);
  EXPECT_TRUE(ex::sync_wait(ctx(), ex::sleep_until(ringio::now() + 1ms)));
  EXPECT_TRUE(ex::sync_wait(ctx(), ex::nop()));
  EXPECT_TRUE(ex::sync_wait(ctx(), ex::yield()));
  EXPECT_TRUE(ex::sync_wait(ctx(), ex::scheduler(ctx()).schedule()));

  // A timed-out operation: set_error(timed_out).
  socket_pair p;
  try {
    (void)ex::sync_wait(ctx(), ex::as_sender(with_timeout(p.a.recv(std::as_writable_bytes(std::span(buf))), 10ms)));
    ADD_FAILURE() << "no timeout";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::timed_out);
  }

  // Channel receive.
  channel<int> ch(4);
  EXPECT_TRUE(ch.try_send(42));
  auto got = ex::sync_wait(ctx(), ex::receive(ch));
  ASSERT_TRUE(got);
  ASSERT_TRUE(std::get<0>(*got));
  EXPECT_EQ(*std::get<0>(*got), 42);
}

TEST_P(Senders, ATimerStoppedWhilePendingCompletesStopped) {
  std::stop_source stop;
  auto t0 = ringio::now();
  auto r = ex::sync_wait(ctx(), ex::when_all(with_token(ex::sleep_for(10s), stop.get_token()),
                                             ex::sleep_for(10ms) | ex::then([&] { stop.request_stop(); })));
  EXPECT_FALSE(r);
  EXPECT_LT(ringio::now() - t0, 5s);
}

task<result<std::size_t>> await_recv(stream_socket& s, std::array<char, 64>& buf) {
  auto n = co_await ex::recv(s, std::as_writable_bytes(std::span(buf)));
  co_return n;
}

TEST_P(Senders, TasksAwaitSendersAndTheirStopTokenFlows) {
  socket_pair p;
  std::array<char, 64> buf{};
  send_text(p.b.native_handle(), "awaited");
  auto n = run(await_recv(p.a, buf));
  ASSERT_TRUE(n);
  EXPECT_EQ(text_of(buf, *n), "awaited");
  // The task's stop token (with_timeout stops it) reaches the sender.
  auto timed = run(with_timeout(await_recv(p.a, buf), 20ms));
  ASSERT_FALSE(timed);
  EXPECT_EQ(timed.error(), std::errc::timed_out);
  // A sender completing with several values gives a tuple; just() gives void.
  auto many = run([]() -> task<std::tuple<int, int>> {
    auto r = co_await ex::just(1, 2);
    co_return r ? *r : std::tuple<int, int>{};
  }());
  EXPECT_EQ(many, std::make_tuple(1, 2));
}

TEST_P(Senders, TaskAsASenderAndStopThroughFromTask) {
  auto v =
      ex::sync_wait(ctx(), ex::from_task([]() -> task<int> { co_return 5; }()) | ex::then([](int x) { return x * 2; }));
  ASSERT_TRUE(v);
  EXPECT_EQ(std::get<0>(*v), 10);
  // The receiver's stop token is the task's: the sleep inside it is cancelled.
  auto stopped = ex::sync_wait(ctx(), ex::when_any(ex::from_task([]() -> task<bool> {
                                                     auto s = co_await sleep_for(10s);
                                                     co_return !s && s.error() == std::errc::operation_canceled;
                                                   }()),
                                                   ex::sleep_for(10ms) | ex::then([] { return false; })));
  ASSERT_TRUE(stopped);
  EXPECT_FALSE(std::get<0>(*stopped));  // the timer won; the task saw the cancel
  try {
    (void)ex::sync_wait(ctx(), ex::from_task([]() -> task<int> {
                          throw std::runtime_error("boom");
                          co_return 1;
                        }()));
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom");
  }
}

TEST_P(Senders, RandomStopsNeverLoseData) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  socket_pair p;
  std::string sent, received;
  std::array<char, 64> buf{};
  int stopped = 0, values = 0;
  for (int round = 0; round < 300; ++round) {
    if (rng() % 2 == 0) {
      std::string chunk(1 + rng() % 40, static_cast<char>('a' + round % 26));
      send_text(p.b.native_handle(), chunk);
      sent += chunk;
    }
    std::stop_source stop;
    int how = static_cast<int>(rng() % 4);
    std::optional<std::tuple<std::size_t>> r;
    if (how == 0) {  // stopped before start
      stop.request_stop();
      r = ex::sync_wait(ctx(), with_token(ex::recv(p.a, std::as_writable_bytes(std::span(buf))), stop.get_token()));
      EXPECT_FALSE(r) << "seed " << seed << " round " << round;
    } else if (how == 1) {  // stopped at once after the start
      auto both = ex::sync_wait(
          ctx(), ex::when_all(with_token(ex::recv(p.a, std::as_writable_bytes(std::span(buf))), stop.get_token()),
                              ex::just() | ex::then([&] { stop.request_stop(); })));
      if (both) r.emplace(std::get<0>(*both));
    } else {  // a timer race of a random length, stopping the receive through its token
      // (when_any would not do: it drops a loser's real result by design, and a receive
      // that completed in the timer's batch is such a loser).
      auto d = std::chrono::microseconds(rng() % 2000);
      auto both = ex::sync_wait(
          ctx(), ex::when_all(with_token(ex::recv(p.a, std::as_writable_bytes(std::span(buf))), stop.get_token()),
                              ex::sleep_for(d) | ex::then([&] { stop.request_stop(); })));
      if (both) r.emplace(std::get<0>(*both));
    }
    if (r) {
      ++values;
      received.append(buf.data(), std::get<0>(*r));
    } else {
      ++stopped;
    }
    EXPECT_EQ(ctx().in_flight(), 0u) << "seed " << seed << " round " << round;
  }
  // Drain what is left, then compare: every byte sent arrived once, in order.
  ::shutdown(p.b.native_handle(), SHUT_WR);
  for (;;) {
    auto r = ex::sync_wait(ctx(), ex::recv(p.a, std::as_writable_bytes(std::span(buf))));
    ASSERT_TRUE(r);
    if (std::get<0>(*r) == 0) break;
    received.append(buf.data(), std::get<0>(*r));
  }
  EXPECT_EQ(received, sent) << "seed " << seed;
  EXPECT_GT(stopped, 0);
  EXPECT_GT(values, 0);
}

TEST_P(Senders, PendingAcceptAndConnectSendersStop) {
  auto listener = listen_loopback();
  // Nobody connects: the timer wins, the accept is cancelled and waited for.
  try {
    (void)ex::sync_wait(ctx(), ex::when_any(ex::accept(listener), ex::fail_after(10ms)));
    ADD_FAILURE() << "accepted nothing";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::timed_out);
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
  // The listener still works afterwards.
  auto pair = ex::sync_wait(ctx(), ex::when_all(ex::accept(listener), ex::connect_to(address_of(listener))));
  ASSERT_TRUE(pair);
  // A stop before start: set_stopped, no socket created.
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(ex::sync_wait(ctx(), with_token(ex::connect_to(address_of(listener)), stop.get_token())));
  EXPECT_FALSE(ex::sync_wait(ctx(), with_token(ex::accept(listener), stop.get_token())));
}

TEST_P(Senders, ErrorsAndExceptionsPassThroughTheAlgorithms) {
  socket_pair p;
  ::close(p.b.release());
  const std::string data(100, 'x');
  bool then_ran = false, let_ran = false;
  try {
    (void)ex::sync_wait(ctx(), ex::send_all(p.a, std::as_bytes(std::span(data))) | ex::then([&](std::size_t) {
                                 then_ran = true;
                                 return 1;
                               }) | ex::let_value([&](int) {
                                 let_ran = true;
                                 return ex::just();
                               }));
    ADD_FAILURE();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::broken_pipe);
  }
  EXPECT_FALSE(then_ran);
  EXPECT_FALSE(let_ran);
  try {
    (void)ex::sync_wait(ctx(), ex::just(1) | ex::then([](int) -> int { throw std::logic_error("in then"); }));
    ADD_FAILURE();
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "in then");
  }
}

TEST_P(Senders, RepeatUntilRunsInlineRoundsWithoutRecursion) {
  int rounds = 0;
  // A million rounds that each complete inside start(): a recursive loop would overflow.
  auto r = ex::sync_wait(
      ctx(), ex::repeat_until([&] { return ex::just() | ex::then([&] { return ++rounds == 1'000'000; }); }));
  EXPECT_TRUE(r);
  EXPECT_EQ(rounds, 1'000'000);
  // Rounds that yield to the loop, and a stop that ends the loop.
  rounds = 0;
  std::stop_source stop;
  auto stopped = ex::sync_wait(ctx(), with_token(ex::repeat_until([&] {
                                                   if (++rounds == 100) stop.request_stop();
                                                   return ex::yield() | ex::then([] { return false; });
                                                 }),
                                                 stop.get_token()));
  EXPECT_FALSE(stopped);
  EXPECT_EQ(rounds, 100);
}

// A last round that completes inside start() hands the result to the awaiting task at
// once; when that task then ends, its frame (and the loop's state in it) is gone before
// start() returns. The loop must not touch itself after that. Same for an error.
TEST_P(Senders, AnInlineLastRoundMayEndTheAwaitingTaskAndFreeTheLoop) {
  socket_pair p;
  int rounds = 0;
  int stops = 0;
  ringio::sync_wait(ctx(), [](socket_pair& p, int& rounds, int& stops) -> task<void> {
    scope s;
    // Round 1 waits for a byte; the peer then sends two, so round 2 finds its byte
    // there (a readiness backend completes it inside start()) and ends the loop.
    s.spawn([](stream_socket& rx, int& rounds) -> task<void> {
      std::array<std::byte, 1> b;
      auto r = co_await ex::repeat_until(
          [&] { return ex::recv(rx, b) | ex::then([&](std::size_t) { return ++rounds == 2; }); });
      EXPECT_TRUE(r);
    }(p.b, rounds));
    s.spawn([](stream_socket& tx) -> task<void> {
      co_await yield();
      auto w = co_await tx.send_all(const_buffer("ab", 2));
      EXPECT_TRUE(w);
    }(p.a));
    // Round 1 waits for the loop and asks for a stop; round 2 then stops inside start().
    s.spawn([](int& stops) -> task<void> {
      std::stop_source stop;
      int n = 0;
      auto r = co_await with_token(ex::repeat_until([&] {
                                     if (++n == 2) stop.request_stop();
                                     return ex::yield() | ex::then([] { return false; });
                                   }),
                                   stop.get_token());
      if (!r) ++stops;
    }(stops));
    co_await s.join();
  }(p, rounds, stops));
  EXPECT_EQ(rounds, 2);
  EXPECT_EQ(stops, 1);
}

// Over TCP: random stops (before start, right after, timer races) on the receiving
// side while the peer sends random chunks; then the peer ends the connection either
// gracefully (shutdown: every byte must arrive, then end of stream) or with a reset
// (SO_LINGER 0: what arrived is a prefix of what was sent, then connection_reset).
TEST_P(Senders, RandomStopsThenAShutdownOrResetKeepTheStreamIntact) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (int run = 0; run < 4; ++run) {
    auto listener = listen_loopback();
    auto pair = ex::sync_wait(ctx(), ex::when_all(ex::accept(listener), ex::connect_to(address_of(listener))));
    ASSERT_TRUE(pair);
    auto& [rx, tx] = *pair;
    std::string sent, received;
    std::array<char, 64> buf{};
    const int rounds = 20 + static_cast<int>(rng() % 60);
    for (int round = 0; round < rounds; ++round) {
      if (rng() % 3 != 0) {
        std::string chunk(1 + rng() % 100, static_cast<char>('A' + (round + run) % 26));
        auto w = ex::sync_wait(ctx(), ex::send_all(tx, std::as_bytes(std::span(chunk))));
        ASSERT_TRUE(w);
        sent += chunk;
      }
      std::stop_source stop;
      std::optional<std::size_t> n;
      switch (rng() % 3) {
        case 0: {
          stop.request_stop();
          auto r =
              ex::sync_wait(ctx(), with_token(ex::recv(rx, std::as_writable_bytes(std::span(buf))), stop.get_token()));
          EXPECT_FALSE(r) << "seed " << seed;
          break;
        }
        case 1: {
          auto r = ex::sync_wait(
              ctx(), ex::when_all(with_token(ex::recv(rx, std::as_writable_bytes(std::span(buf))), stop.get_token()),
                                  ex::yield() | ex::then([&] { stop.request_stop(); })));
          if (r) n = std::get<0>(*r);
          break;
        }
        default: {  // a timer stops the receive through its token (when_any would drop
                    // a receive that completed in the timer's batch: a loser's result)
          auto d = std::chrono::microseconds(rng() % 1500);
          auto r = ex::sync_wait(
              ctx(), ex::when_all(with_token(ex::recv(rx, std::as_writable_bytes(std::span(buf))), stop.get_token()),
                                  ex::sleep_for(d) | ex::then([&] { stop.request_stop(); })));
          if (r) n = std::get<0>(*r);
        }
      }
      if (n) received.append(buf.data(), *n);
      EXPECT_EQ(ctx().in_flight(), 0u) << "seed " << seed;
    }
    const bool reset = rng() % 2 == 0;
    if (reset) {
      linger l{1, 0};
      ASSERT_EQ(::setsockopt(tx.native_handle(), SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
    }
    EXPECT_TRUE(ex::sync_wait(ctx(), ex::close(tx)));
    std::error_code end;
    for (;;) {
      try {
        auto r = ex::sync_wait(ctx(), ex::recv(rx, std::as_writable_bytes(std::span(buf))));
        ASSERT_TRUE(r);
        if (std::get<0>(*r) == 0) break;
        received.append(buf.data(), std::get<0>(*r));
      } catch (const std::system_error& e) {
        end = e.code();
        break;
      }
    }
    if (reset) {
      EXPECT_TRUE(!end || end == std::errc::connection_reset) << end.message() << ", seed " << seed;
      EXPECT_EQ(received, sent.substr(0, received.size())) << "seed " << seed;
    } else {
      EXPECT_FALSE(end) << end.message() << ", seed " << seed;
      EXPECT_EQ(received, sent) << "seed " << seed;
    }
  }
}

TEST_P(Senders, StoppedOperationsOfEveryKind) {
  // recv_exact stopped after part of the block arrived: the count, not set_stopped.
  socket_pair p;
  send_text(p.b.native_handle(), "part");
  std::array<char, 64> buf{};
  std::stop_source stop;
  auto partial = ex::sync_wait(
      ctx(), ex::when_all(with_token(ex::recv_exact(p.a, std::as_writable_bytes(std::span(buf))), stop.get_token()),
                          ex::sleep_for(20ms) | ex::then([&] { stop.request_stop(); })));
  ASSERT_TRUE(partial);
  EXPECT_EQ(text_of(buf, std::get<0>(*partial)), "part");

  // A pending datagram receive: set_stopped, then the next datagram is received.
  auto u1 = udp_socket::bind(socket_address::loopback(0));
  auto u2 = udp_socket::bind(socket_address::loopback(0));
  ASSERT_TRUE(u1 && u2);
  std::stop_source stop2;
  auto none = ex::sync_wait(
      ctx(), ex::when_all(with_token(ex::recv_from(*u2, std::as_writable_bytes(std::span(buf))), stop2.get_token()),
                          ex::sleep_for(10ms) | ex::then([&] { stop2.request_stop(); })));
  EXPECT_FALSE(none);
  auto to = u2->local_address();
  ASSERT_TRUE(to);
  auto dg = ex::sync_wait(ctx(), ex::when_all(ex::send_to(*u1, std::as_bytes(std::span("next", 4)), *to),
                                              ex::recv_from(*u2, std::as_writable_bytes(std::span(buf)))));
  ASSERT_TRUE(dg);
  EXPECT_EQ(text_of(buf, std::get<1>(*dg).size), "next");

  // Stopped before start: timers, nop, yield, schedule.
  std::stop_source stopped;
  stopped.request_stop();
  EXPECT_FALSE(ex::sync_wait(ctx(), with_token(ex::sleep_for(10s), stopped.get_token())));
  EXPECT_FALSE(ex::sync_wait(ctx(), with_token(ex::nop(), stopped.get_token())));
  EXPECT_FALSE(ex::sync_wait(ctx(), with_token(ex::yield(), stopped.get_token())));
  EXPECT_FALSE(ex::sync_wait(ctx(), with_token(ex::fail_after(10s), stopped.get_token())));
  // A close is not stoppable: the descriptor is released anyway.
  EXPECT_TRUE(ex::sync_wait(ctx(), with_token(ex::close(p.a), stopped.get_token())));
  EXPECT_FALSE(p.a.is_open());
  EXPECT_EQ(ctx().in_flight(), 0u);
}

TEST(SenderSyncWait, RunsAFreshContextWhenNoneIsGiven) {
  auto r = ex::sync_wait(ex::sleep_for(1ms) | ex::then([] { return io_context::current() != nullptr; }));
  ASSERT_TRUE(r);
  EXPECT_TRUE(std::get<0>(*r));
}

RINGIO_ALL_BACKENDS_AND_SIM(Senders);

// Two loops on two threads: work hops to the other loop and back.
TEST(SenderCrossThread, StartsOnAndContinuesOnHopBetweenLoops) {
  io_context home, other;
  std::thread::id other_id;
  std::atomic<bool> ready{false};
  std::thread t([&] {
    other_id = std::this_thread::get_id();
    ready = true;
    other.run();
  });
  while (!ready) std::this_thread::yield();
  const auto home_id = std::this_thread::get_id();
  for (int i = 0; i < 200; ++i) {
    std::thread::id ran_on, finished_on;
    auto r = ex::sync_wait(
        home, ex::starts_on(ex::scheduler(other), ex::sleep_for(std::chrono::microseconds(i % 3)) | ex::then([&, i] {
                                                    ran_on = std::this_thread::get_id();
                                                    return i;
                                                  })) |
                  ex::continues_on(ex::scheduler(home)) | ex::then([&](int v) {
                    finished_on = std::this_thread::get_id();
                    return v;
                  }));
    ASSERT_TRUE(r);
    EXPECT_EQ(std::get<0>(*r), i);
    EXPECT_EQ(ran_on, other_id);
    EXPECT_EQ(finished_on, home_id);
  }
  // A stop from the home loop reaches an operation waiting on the other loop.
  auto stopped = ex::sync_wait(home, ex::when_any(ex::starts_on(ex::scheduler(other), ex::sleep_for(10s)) |
                                                      ex::continues_on(ex::scheduler(home)),
                                                  ex::sleep_for(5ms)));
  EXPECT_TRUE(stopped);  // the local timer won; the remote sleep was cancelled and waited for
  other.stop();
  t.join();
}

// A stop requested on another thread reaches receives pending in when_all (through
// its in-place stop source) and cancels them on their loop; nothing is lost.
TEST(SenderCrossThread, StopFromAnotherThreadCancelsPendingReceives) {
  io_context ctx;
  for (int round = 0; round < 50; ++round) {
    socket_pair p, q;
    std::stop_source stop;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 10)));
      stop.request_stop();
    });
    std::array<char, 64> b1{}, b2{};
    auto r = ex::sync_wait(ctx, with_token(ex::when_all(ex::recv(p.a, std::as_writable_bytes(std::span(b1))),
                                                        ex::recv(q.a, std::as_writable_bytes(std::span(b2)))),
                                           stop.get_token()));
    stopper.join();
    EXPECT_FALSE(r);
    EXPECT_EQ(ctx.in_flight(), 0u);
    send_text(p.b.native_handle(), "still here");
    auto again = ex::sync_wait(ctx, ex::recv(p.a, std::as_writable_bytes(std::span(b1))));
    ASSERT_TRUE(again);
    EXPECT_EQ(std::string(b1.data(), std::get<0>(*again)), "still here");
  }
}

}  // namespace
