// SPDX-License-Identifier: Apache-2.0
// batching_writer: what queued goes out in few gathered sends, in order; the bound
// under each policy (drop_oldest with its gap notice, wait, fail); close with queued
// data; a peer reset, a stop and the writer's destruction while a send is in flight.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <system_error>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class BatchingWriter : public backend_test {};

using text = std::shared_ptr<const std::string>;
text make_text(std::string s) { return std::make_shared<const std::string>(std::move(s)); }
text missed_notice(std::uint64_t n) { return make_text("missed " + std::to_string(n) + "\n"); }

// Small socket buffers on both ends, so a peer that does not read stalls the sender soon.
void shrink_buffers(socket_pair& p) {
  int bytes = 4096;
  for (auto* s : {&p.a, &p.b}) {
    ::setsockopt(s->native_handle(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    ::setsockopt(s->native_handle(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
}

// Everything the peer sends until it closes its side (or an error, or 10 s of silence).
task<std::string> read_all(stream_socket& s) {
  std::string got;
  std::array<char, 65536> buf;
  for (;;) {
    auto n = co_await with_timeout(s.recv(buf), 10s);
    if (!n || *n == 0) co_return got;
    got.append(buf.data(), *n);
  }
}

// Runs the writer and keeps its result.
task<void> run_into(batching_writer<text>& w, result<void>& out) { out = co_await w.run(); }

std::string numbered(int from, int to) {
  std::string s;
  for (int i = from; i < to; ++i) s += std::to_string(i) + "\n";
  return s;
}

TEST_P(BatchingWriter, WhatQueuedGoesOutInOrderInFewGatheredSends) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    batching_writer<std::string> w(p.a);
    for (int i = 0; i < 1000; ++i) EXPECT_TRUE(w.try_write(std::to_string(i) + "\n"));
    EXPECT_EQ(w.queued(), 1000u);
    w.close();
    auto ran = co_await w.run();
    EXPECT_TRUE(ran) << ran.error().message();
    EXPECT_LE(w.sends(), 1000u / 64 + 1) << "one gathered send per 64 messages";
    ::shutdown(p.a.native_handle(), SHUT_WR);
    auto got = co_await read_all(p.b);
    EXPECT_EQ(got, numbered(0, 1000));
  }(p));
}

TEST_P(BatchingWriter, MessagesQueuedWhileASendIsInFlightGoTogether) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    batching_writer<std::string_view> w(p.a);
    scope sc;
    result<void> ran = unexpected(std::errc::interrupted);
    sc.spawn(
        [](batching_writer<std::string_view>& w, result<void>& out) -> task<void> { out = co_await w.run(); }(w, ran));
    for (int round = 0; round < 50; ++round) {
      for (int i = 0; i < 20; ++i) EXPECT_TRUE(w.try_write("0123456789\n"));
      co_await yield();
    }
    w.close();
    co_await sc.join();
    EXPECT_TRUE(ran);
    EXPECT_LE(w.sends(), 200u) << "1,000 messages, 20 per loop turn";
    ::shutdown(p.a.native_handle(), SHUT_WR);
    auto got = co_await read_all(p.b);
    EXPECT_EQ(got.size(), 1000u * 11);
  }(p));
}

TEST_P(BatchingWriter, DropOldestKeepsTheNewestAndSendsAGapNotice) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    batching_writer<text> w(p.a, {.max_messages = 4, .when_full = overflow_policy::drop_oldest}, missed_notice);
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(w.try_write(make_text(std::to_string(i) + "\n")));
    EXPECT_EQ(w.queued(), 4u);
    EXPECT_EQ(w.dropped(), 6u);
    w.close();
    auto ran = co_await w.run();
    EXPECT_TRUE(ran);
    ::shutdown(p.a.native_handle(), SHUT_WR);
    auto got = co_await read_all(p.b);
    EXPECT_EQ(got, "missed 6\n6\n7\n8\n9\n");
  }(p));
}

// Drops while a send is stalled: the peer gets what was in flight, then the notice,
// then the newest messages; every message is either received or counted as missed.
TEST_P(BatchingWriter, GapNoticesStandWhereTheMessagesWereDropped) {
  socket_pair p;
  shrink_buffers(p);
  run([](socket_pair& p) -> task<void> {
    batching_writer<text> w(p.a, {.max_messages = 8, .when_full = overflow_policy::drop_oldest}, missed_notice);
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    const std::string pad(200, '.');
    for (int i = 0; i < 1000; ++i) {
      EXPECT_TRUE(w.try_write(make_text(std::to_string(i) + pad + "\n")));
      if (i % 10 == 0) co_await yield();  // run() takes batches while the peer's buffer fills
    }
    w.close();
    auto reader = [](stream_socket& s, std::string& got) -> task<void> { got = co_await read_all(s); };
    std::string got;
    scope rd;
    rd.spawn(reader(p.b, got));
    co_await sc.join();
    EXPECT_TRUE(ran);
    ::shutdown(p.a.native_handle(), SHUT_WR);
    co_await rd.join();
    std::uint64_t received = 0, missed = 0;
    long last = -1;
    bool ordered = true, gap_explained = true;
    std::uint64_t pending_notice = 0;
    for (std::size_t at = 0, nl; (nl = got.find('\n', at)) != std::string::npos; at = nl + 1) {
      const std::string l = got.substr(at, nl - at);
      if (l.starts_with("missed ")) {
        pending_notice = std::stoull(l.substr(7));
        missed += pending_notice;
        continue;
      }
      const long i = std::stol(l);
      gap_explained = gap_explained && static_cast<std::uint64_t>(i - last - 1) == pending_notice;
      ordered = ordered && i > last;
      pending_notice = 0;
      last = i;
      ++received;
    }
    EXPECT_TRUE(ordered);
    EXPECT_TRUE(gap_explained) << "a notice does not stand where its messages were dropped";
    EXPECT_GT(missed, 0u) << "the peer's buffers took everything: nothing was dropped";
    EXPECT_EQ(missed, w.dropped());
    EXPECT_EQ(received + missed, 1000u);
    EXPECT_EQ(last, 999);
  }(p));
}

TEST_P(BatchingWriter, TheByteBoundCountsBytesAndALargeMessageFitsAlone) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    batching_writer<std::string> w(p.a, {.max_bytes = 10, .when_full = overflow_policy::drop_oldest});
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(w.try_write("abc\n"));
    EXPECT_EQ(w.queued(), 2u);
    EXPECT_EQ(w.queued_bytes(), 8u);
    EXPECT_EQ(w.dropped(), 3u);
    EXPECT_TRUE(w.try_write(std::string(100, 'x')));  // bigger than the bound: it goes alone
    EXPECT_EQ(w.queued(), 1u);
    EXPECT_EQ(w.dropped(), 5u);
    w.close();
    auto ran = co_await w.run();
    EXPECT_TRUE(ran);
    ::shutdown(p.a.native_handle(), SHUT_WR);
    auto got = co_await read_all(p.b);
    EXPECT_EQ(got, std::string(100, 'x'));
  }(p));
}

// The producer writes 2,000 messages through a bound of 8: it waits, nothing is lost.
TEST_P(BatchingWriter, WaitHoldsTheProducerBackUntilThereIsRoom) {
  socket_pair p;
  shrink_buffers(p);
  run([](socket_pair& p) -> task<void> {
    batching_writer<std::string> w(p.a, {.max_messages = 8, .when_full = overflow_policy::wait});
    for (int i = 0; i < 8; ++i) EXPECT_TRUE(w.try_write(std::to_string(i) + "\n"));
    auto refused = w.try_write("8\n");
    EXPECT_EQ(refused.error(), std::errc::resource_unavailable_try_again);
    auto producer = [](batching_writer<std::string>& w) -> task<void> {
      for (int i = 8; i < 2000; ++i) {
        auto r = co_await w.write(std::to_string(i) + "\n");
        EXPECT_TRUE(r) << r.error().message();
        EXPECT_LE(w.queued(), 8u);
      }
      w.close();
    };
    auto sender = [](batching_writer<std::string>& w, stream_socket& s) -> task<void> {
      auto ran = co_await w.run();
      EXPECT_TRUE(ran) << ran.error().message();
      ::shutdown(s.native_handle(), SHUT_WR);
    };
    auto reader = [](stream_socket& s, std::string& got) -> task<void> { got = co_await read_all(s); };
    std::string got;
    co_await when_all(producer(w), sender(w, p.a), reader(p.b, got));
    EXPECT_EQ(got, numbered(0, 2000));
    EXPECT_EQ(w.dropped(), 0u);
  }(p));
}

// A peer that never reads: the queue fills, the writer fails, the stuck send is cancelled.
TEST_P(BatchingWriter, FailEndsTheWriterAndCancelsTheStalledSend) {
  socket_pair p;
  shrink_buffers(p);
  run([](socket_pair& p) -> task<void> {
    batching_writer<text> w(p.a, {.max_messages = 16, .when_full = overflow_policy::fail});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    auto block = make_text(std::string(64 * 1024, 'x'));
    result<void> last;
    int accepted = 0;
    for (; accepted < 1000; ++accepted) {
      last = w.try_write(block);
      if (!last) break;
      if (accepted % 8 == 0) co_await yield();  // run() takes its batch and stalls
    }
    EXPECT_FALSE(last);
    if (last) co_return;
    EXPECT_EQ(last.error(), std::errc::no_buffer_space);
    EXPECT_FALSE(w.is_open());
    const auto start = std::chrono::steady_clock::now();
    co_await sc.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "the stalled send was not cancelled at once";
    EXPECT_EQ(ran.error(), std::errc::no_buffer_space);
    EXPECT_EQ(w.try_write(block).error(), std::errc::no_buffer_space);
    EXPECT_EQ(w.queued(), 0u);
  }(p));
}

TEST_P(BatchingWriter, CloseSendsWhatIsQueuedThenWritesFail) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    batching_writer<std::string> w(p.a, {.when_full = overflow_policy::wait});
    scope sc;
    result<void> ran = unexpected(std::errc::interrupted);
    sc.spawn([](batching_writer<std::string>& w, result<void>& out) -> task<void> { out = co_await w.run(); }(w, ran));
    EXPECT_TRUE(w.try_write("last words\n"));
    w.close();
    EXPECT_EQ(w.try_write("late\n").error(), errc::closed);
    auto late = co_await w.write("later\n");
    EXPECT_EQ(late.error(), errc::closed);
    co_await sc.join();
    EXPECT_TRUE(ran);
    auto again = co_await w.run();
    EXPECT_TRUE(again) << "a run() after the end says how it ended";
    ::shutdown(p.a.native_handle(), SHUT_WR);
    auto got = co_await read_all(p.b);
    EXPECT_EQ(got, "last words\n");
  }(p));
}

// TCP: the peer resets (SO_LINGER 0) while the writer's send waits for room; run()
// returns the reset, a producer waiting for room wakes with it, later writes fail.
TEST_P(BatchingWriter, APeerResetMidSendEndsRunWithTheError) {
  auto l = listen_loopback();
  auto at = address_of(l);
  run([](stream_listener& l, socket_address at) -> task<void> {
    auto c = co_await stream_socket::connect(at);
    auto s = co_await l.accept();
    EXPECT_TRUE(c && s);
    if (!c || !s) co_return;
    batching_writer<text> w(*s, {.max_messages = 4, .when_full = overflow_policy::wait});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    auto block = make_text(std::string(1 << 20, 'x'));
    auto producer = [](batching_writer<text>& w, text block) -> task<void> {
      for (;;) {
        auto r = co_await w.write(block);
        if (!r) {
          EXPECT_TRUE(r.error() == std::errc::connection_reset || r.error() == std::errc::broken_pipe)
              << r.error().message();
          co_return;
        }
      }
    };
    sc.spawn(producer(w, block));
    auto slept = co_await sleep_for(50ms);  // the send stalls, the producer waits for room
    EXPECT_TRUE(slept);
    ::linger reset{.l_onoff = 1, .l_linger = 0};
    ::setsockopt(c->native_handle(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    { stream_socket gone = std::move(*c); }  // closed with unread data and no linger: a reset
    co_await sc.join();
    EXPECT_FALSE(ran);
    if (ran) co_return;
    EXPECT_TRUE(ran.error() == std::errc::connection_reset || ran.error() == std::errc::broken_pipe)
        << ran.error().message();
    EXPECT_EQ(w.try_write(block).error(), ran.error());
  }(l, at));
}

// A stop while the send waits for a peer that does not read: run() ends with
// operation_canceled, and the peer has a prefix of the stream, nothing else.
TEST_P(BatchingWriter, AStopMidSendEndsRunAndTheWriter) {
  socket_pair p;
  shrink_buffers(p);
  run([](socket_pair& p) -> task<void> {
    batching_writer<std::string> w(p.a, {.max_messages = 1 << 20});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn([](batching_writer<std::string>& w, result<void>& out) -> task<void> { out = co_await w.run(); }(w, ran));
    std::string all;
    for (int i = 0; i < 20000; ++i) {
      std::string m = std::to_string(i) + "\n";
      all += m;
      EXPECT_TRUE(w.try_write(std::move(m)));
    }
    auto slept = co_await sleep_for(20ms);
    EXPECT_TRUE(slept);
    EXPECT_GT(w.queued(), 0u) << "the peer's buffers took everything: no stall";
    sc.request_stop();
    co_await sc.join();
    EXPECT_EQ(ran.error(), std::errc::operation_canceled);
    EXPECT_FALSE(w.is_open());
    EXPECT_EQ(w.queued(), 0u);
    EXPECT_EQ(w.try_write("more\n").error(), std::errc::operation_canceled);
    ::shutdown(p.a.native_handle(), SHUT_WR);
    auto got = co_await read_all(p.b);
    EXPECT_LT(got.size(), all.size());
    EXPECT_EQ(got, all.substr(0, got.size()));
  }(p));
}

// The writer is destroyed while its send waits for a peer that does not read: the
// messages in flight stay alive until the send has completed, then are released.
TEST_P(BatchingWriter, DestroyedWhileASendIsInFlightKeepsItsBytesUntilTheSendCompletes) {
  socket_pair p;
  shrink_buffers(p);
  run([](socket_pair& p) -> task<void> {
    auto block = make_text(std::string(256 * 1024, 'x'));
    auto w = std::make_unique<batching_writer<text>>(p.a, batching_writer_options{.max_bytes = 512 * 1024});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(*w, ran));
    for (int i = 0; i < 4; ++i) {
      auto queued = co_await w->write(block);  // two go in flight, two wait in the queue
      EXPECT_TRUE(queued);
    }
    auto slept = co_await sleep_for(20ms);
    EXPECT_TRUE(slept);
    const long queued = static_cast<long>(w->queued());
    EXPECT_GT(block.use_count(), 1 + queued) << "no send in flight";
    w.reset();
    EXPECT_GT(block.use_count(), 1) << "the batch in flight was released before its send completed";
    co_await sc.join();
    EXPECT_EQ(ran.error(), std::errc::operation_canceled);
    EXPECT_EQ(block.use_count(), 1);
    ::shutdown(p.a.native_handle(), SHUT_WR);
    auto got = co_await read_all(p.b);
    EXPECT_EQ(got, std::string(got.size(), 'x'));
  }(p));
}

// Runs a writer of strings, keeps its result and then ends the stream.
task<void> run_then_shut(batching_writer<std::string>& w, stream_socket& s, result<void>& out) {
  out = co_await w.run();
  ::shutdown(s.native_handle(), SHUT_WR);
}

task<void> write_into(batching_writer<std::string>& w, std::string m, result<void>& out) {
  out = co_await w.write(std::move(m));
}

// Waiting writes queue in the order they began: a small message that would fit does
// not pass a large one that waits, and try_write() does not barge in either.
TEST_P(BatchingWriter, WaitingWritesAreServedFirstComeFirstServed) {
  socket_pair p;
  shrink_buffers(p);
  run([](socket_pair& p) -> task<void> {
    batching_writer<std::string> w(p.a, {.max_bytes = 100, .when_full = overflow_policy::wait});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_then_shut(w, p.a, ran));
    const std::string big(4 << 20, 'B');
    EXPECT_TRUE(w.try_write(big));
    auto slept = co_await sleep_for(20ms);  // the big message is in flight and stalls
    EXPECT_TRUE(slept);
    EXPECT_EQ(w.queued(), 0u);
    EXPECT_TRUE(w.try_write(std::string(90, 'q')));
    result<void> first = unexpected(std::errc::interrupted);
    result<void> second = unexpected(std::errc::interrupted);
    scope producers;
    producers.spawn(write_into(w, std::string(50, 'A'), first));  // 140 > 100: waits
    producers.spawn(write_into(w, "b", second));                  // 91 fits, but A waits
    slept = co_await sleep_for(10ms);
    EXPECT_TRUE(slept);
    EXPECT_EQ(w.queued(), 1u) << "a later write passed one that waits";
    EXPECT_EQ(w.try_write("c").error(), std::errc::resource_unavailable_try_again);
    std::string got;
    sc.spawn([](stream_socket& s, std::string& got) -> task<void> { got = co_await read_all(s); }(p.b, got));
    co_await producers.join();
    EXPECT_TRUE(first);
    EXPECT_TRUE(second);
    w.close();
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    EXPECT_EQ(got.size(), big.size() + 90 + 50 + 1);
    EXPECT_EQ(got, big + std::string(90, 'q') + std::string(50, 'A') + "b");
  }(p));
}

// The write at the head of the line is stopped: the one behind it, which fits, is
// queued at once, without waiting for the stalled send.
TEST_P(BatchingWriter, AStoppedWaitingWriteLetsTheNextOneIn) {
  socket_pair p;
  shrink_buffers(p);
  run([](socket_pair& p) -> task<void> {
    batching_writer<std::string> w(p.a, {.max_bytes = 100, .when_full = overflow_policy::wait});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_then_shut(w, p.a, ran));
    EXPECT_TRUE(w.try_write(std::string(4 << 20, 'B')));
    auto slept = co_await sleep_for(20ms);
    EXPECT_TRUE(slept);
    EXPECT_TRUE(w.try_write(std::string(90, 'q')));
    result<void> head = unexpected(std::errc::interrupted);
    result<void> next = unexpected(std::errc::interrupted);
    scope stopped;
    stopped.spawn(write_into(w, std::string(50, 'A'), head));
    sc.spawn(write_into(w, "b", next));
    slept = co_await sleep_for(10ms);
    EXPECT_TRUE(slept);
    EXPECT_EQ(w.queued(), 1u);
    stopped.request_stop();
    co_await stopped.join();
    EXPECT_EQ(head.error(), std::errc::operation_canceled);
    slept = co_await sleep_for(10ms);
    EXPECT_TRUE(slept);
    EXPECT_TRUE(next) << next.error().message();
    EXPECT_EQ(w.queued(), 2u) << "the write behind the stopped one still waits";
    sc.request_stop();
    co_await sc.join();
  }(p));
}

// The writer is destroyed while a write() waits for room: the write ends with
// operation_canceled and touches nothing of the writer.
TEST_P(BatchingWriter, DestroyedWhileAWriteWaitsEndsTheWrite) {
  socket_pair p;
  shrink_buffers(p);
  run([](socket_pair& p) -> task<void> {
    auto w = std::make_unique<batching_writer<std::string>>(
        p.a, batching_writer_options{.max_messages = 1, .when_full = overflow_policy::wait});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn([](batching_writer<std::string>& w, result<void>& out) -> task<void> { out = co_await w.run(); }(*w, ran));
    EXPECT_TRUE(w->try_write(std::string(4 << 20, 'B')));
    auto slept = co_await sleep_for(20ms);
    EXPECT_TRUE(slept);
    EXPECT_TRUE(w->try_write("q"));
    result<void> waited = unexpected(std::errc::interrupted);
    scope writes;
    writes.spawn(write_into(*w, "x", waited));
    slept = co_await sleep_for(10ms);
    EXPECT_TRUE(slept);
    EXPECT_EQ(waited.error(), std::errc::interrupted) << "the write did not wait";
    w.reset();
    co_await writes.join();
    EXPECT_EQ(waited.error(), std::errc::operation_canceled);
    co_await sc.join();
    EXPECT_EQ(ran.error(), std::errc::operation_canceled);
  }(p));
}

TEST_P(BatchingWriter, OneRunAtATime) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    batching_writer<text> w(p.a);
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    auto second = co_await w.run();
    EXPECT_EQ(second.error(), std::errc::device_or_resource_busy);
    w.close();
    co_await sc.join();
    EXPECT_TRUE(ran);
  }(p));
}

RINGIO_ALL_BACKENDS(BatchingWriter);

}  // namespace
