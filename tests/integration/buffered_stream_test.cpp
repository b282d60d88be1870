// SPDX-License-Identifier: Apache-2.0
// buffered_stream: messages split across many receives, delimiters split between
// receives, the limits, the end of the stream, the switch to raw reads, and stops at
// awkward points that must lose no byte, on every backend.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class BufferedStream : public backend_test {};

// Sends `data` in pieces of `piece` bytes, giving the loop a turn after each so that
// the reader receives them separately.
task<void> trickle(stream_socket& s, std::string data, std::size_t piece) {
  for (std::size_t i = 0; i < data.size(); i += piece) {
    const std::string_view part = std::string_view(data).substr(i, piece);
    auto sent = co_await s.send_all(part);
    EXPECT_TRUE(sent && *sent == part.size());
    co_await yield();
  }
}

// Sends `data` after `delay`.
task<void> send_later(stream_socket& s, std::string data, std::chrono::milliseconds delay) {
  auto slept = co_await sleep_for(delay);
  EXPECT_TRUE(slept);
  auto sent = co_await s.send_all(std::string_view(data));
  EXPECT_TRUE(sent && *sent == data.size());
}

// Requests a stop of `stop` after `delay`.
task<void> stop_after(std::stop_source& stop, std::chrono::milliseconds delay) {
  auto slept = co_await sleep_for(delay);
  EXPECT_TRUE(slept);
  stop.request_stop();
}

void send_now(stream_socket& s, std::string_view data) {
  EXPECT_EQ(::send(s.native_handle(), data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()));
}

std::string error_text(const std::error_code& ec) { return ec.message(); }

TEST_P(BufferedStream, LinesSplitAcrossManyTinyWrites) {
  socket_pair p;
  std::string all;
  std::vector<std::string> lines;
  for (int i = 0; i < 40; ++i) {
    lines.push_back("line number " + std::to_string(i) + std::string(static_cast<std::size_t>(i), 'x'));
    all += lines.back() + (i % 2 == 0 ? "\r\n" : "\n");
  }
  auto got = run([](socket_pair& p, std::string all) -> task<std::vector<std::string>> {
    std::vector<std::string> got;
    scope s;
    s.spawn(trickle(p.b, std::move(all), 1));
    buffered_stream in(p.a, 64);
    for (int i = 0; i < 40; ++i) {
      auto line = co_await in.read_line();
      EXPECT_TRUE(line) << error_text(line.error());
      if (!line) break;
      got.emplace_back(*line);
    }
    co_await s.join();
    co_return got;
  }(p, all));
  EXPECT_EQ(got, lines);
}

TEST_P(BufferedStream, MultiByteDelimiterSplitBetweenReceives) {
  socket_pair p;
  auto got = run([](socket_pair& p) -> task<std::vector<std::string>> {
    std::vector<std::string> got;
    scope s;
    // Each delimiter "\r\n\r\n" arrives in two or three receives; "\r\n" alone is no match.
    s.spawn([](stream_socket& w) -> task<void> {
      for (std::string_view piece :
           {"GET / HTTP/1.1\r\nHost: a\r", "\n", "\r", "\nsecond\r\n", "\r\nthird\r\n\r", "\n"}) {
        auto sent = co_await w.send_all(piece);
        EXPECT_TRUE(sent);
        auto slept = co_await sleep_for(2ms);
        EXPECT_TRUE(slept);
      }
    }(p.b));
    buffered_stream in(p.a);
    for (int i = 0; i < 3; ++i) {
      auto m = co_await in.read_until("\r\n\r\n");
      EXPECT_TRUE(m) << error_text(m.error());
      if (!m) break;
      got.emplace_back(*m);
    }
    co_await s.join();
    co_return got;
  }(p));
  EXPECT_EQ(got, (std::vector<std::string>{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "second\r\n\r\n", "third\r\n\r\n"}));
}

TEST_P(BufferedStream, DelimiterWithRepeatedPrefixIsFoundWhereItFirstEnds) {
  socket_pair p;
  auto got = run([](socket_pair& p) -> task<std::vector<std::string>> {
    std::vector<std::string> got;
    scope s;
    s.spawn(trickle(p.b, "a--b----c-d---", 1));
    buffered_stream in(p.a);
    for (int i = 0; i < 2; ++i) {
      auto m = co_await in.read_until("---");
      EXPECT_TRUE(m) << error_text(m.error());
      if (!m) break;
      got.emplace_back(*m);
    }
    co_await s.join();
    co_return got;
  }(p));
  // "----": the first "---" ends at its third dash; the fourth begins the next message.
  EXPECT_EQ(got, (std::vector<std::string>{"a--b---", "-c-d---"}));
}

TEST_P(BufferedStream, MaxExceededIsAnErrorThatKeepsTheBytes) {
  socket_pair p;
  send_now(p.b, std::string(100, 'a') + "\nshort\n" + std::string(9, 'b') + "\n");
  run([](socket_pair& p) -> task<void> {
    buffered_stream in(p.a);
    auto long_line = co_await in.read_line(50);
    EXPECT_FALSE(long_line);
    if (long_line) co_return;
    EXPECT_EQ(long_line.error(), errc::message_too_long);
    EXPECT_GE(in.buffered().size(), 50u);
    EXPECT_EQ(in.buffered().substr(0, 50), std::string(50, 'a'));
    // The caller decides: here it skips the long line and goes on.
    auto rest = co_await in.read_until("\n");
    EXPECT_TRUE(rest && *rest == std::string(100, 'a') + "\n");
    auto line = co_await in.read_line(50);
    EXPECT_TRUE(line && *line == "short");
    // Exactly max bytes, line end included, is still allowed.
    auto edge = co_await in.read_line(10);
    EXPECT_TRUE(edge && *edge == std::string(9, 'b')) << (edge ? "" : error_text(edge.error()));
  }(p));
}

TEST_P(BufferedStream, TheCapacityBoundsAMessage) {
  socket_pair p;
  run([](socket_pair& p) -> task<void> {
    scope s;
    s.spawn(trickle(p.b, std::string(20, 'z') + "\n", 3));
    buffered_stream in(p.a, 16);
    EXPECT_EQ(in.capacity(), 16u);
    auto line = co_await in.read_line();  // no max: the buffer is the limit
    EXPECT_FALSE(line);
    EXPECT_EQ(line.error(), errc::message_too_long);
    auto exact = co_await in.read_exact(17);
    EXPECT_FALSE(exact);
    EXPECT_EQ(exact.error(), errc::message_too_long);
    // A caller's buffer has no such limit.
    std::array<char, 21> all{};
    auto n = co_await in.read_exact(all);
    EXPECT_TRUE(n && *n == 21u);
    EXPECT_EQ(std::string_view(all.data(), all.size()), std::string(20, 'z') + "\n");
    auto empty = co_await in.read_until("");
    EXPECT_FALSE(empty);
    EXPECT_EQ(empty.error(), std::errc::invalid_argument);
    co_await s.join();
  }(p));
}

TEST_P(BufferedStream, EndOfStreamMidLineLeavesTheRestBuffered) {
  socket_pair p;
  send_now(p.b, "complete\r\npartial");
  ::shutdown(p.b.native_handle(), SHUT_WR);
  run([](socket_pair& p) -> task<void> {
    buffered_stream in(p.a);
    auto first = co_await in.read_line();
    EXPECT_TRUE(first && *first == "complete");
    auto second = co_await in.read_line();
    EXPECT_FALSE(second);
    EXPECT_EQ(second.error(), errc::end_of_stream);
    EXPECT_TRUE(in.at_end());
    EXPECT_EQ(in.buffered(), "partial");
    // The end is remembered; the rest can still be taken.
    auto again = co_await in.read_until("\n");
    EXPECT_FALSE(again);
    EXPECT_EQ(again.error(), errc::end_of_stream);
    std::array<char, 32> buf{};
    auto n = co_await in.read_some(buf);
    EXPECT_TRUE(n && *n == 7u);
    auto end = co_await in.read_some(buf);
    EXPECT_TRUE(end && *end == 0u);
    auto exact = co_await in.read_exact(buf);
    EXPECT_FALSE(exact);
    EXPECT_EQ(exact.error(), errc::end_of_stream);
  }(p));
}

TEST_P(BufferedStream, EndOfStreamMidExactReadKeepsOrCountsTheBytes) {
  socket_pair p;
  send_now(p.b, "0123456789");
  ::shutdown(p.b.native_handle(), SHUT_WR);
  run([](socket_pair& p) -> task<void> {
    buffered_stream in(p.a);
    auto counted = co_await in.read_exact(20);
    EXPECT_FALSE(counted);
    EXPECT_EQ(counted.error(), errc::end_of_stream);
    EXPECT_EQ(in.buffered(), "0123456789");
    std::array<char, 20> buf{};
    auto n = co_await in.read_exact(buf);
    EXPECT_TRUE(n && *n == 10u) << "a short count: the peer closed after 10 bytes";
    EXPECT_EQ(std::string_view(buf.data(), 10), "0123456789");
  }(p));
}

TEST_P(BufferedStream, ReadExactAcrossManyReceives) {
  socket_pair p;
  auto data = random_bytes(30000, 11);
  std::string text(reinterpret_cast<const char*>(data.data()), data.size());
  auto got = run([](socket_pair& p, std::string text) -> task<std::string> {
    std::string got;
    scope s;
    s.spawn(trickle(p.b, text, 7));
    buffered_stream in(p.a, 4096);
    // Alternate: counted views in the buffer, then large reads into a caller's buffer.
    std::vector<char> big(7000);
    while (got.size() < text.size()) {
      auto piece = co_await in.read_exact(std::min<std::size_t>(1000, text.size() - got.size()));
      EXPECT_TRUE(piece) << error_text(piece.error());
      if (!piece) break;
      got += *piece;
      const std::size_t want = std::min(big.size(), text.size() - got.size());
      auto n = co_await in.read_exact(mutable_buffer(big.data(), want));
      EXPECT_TRUE(n && *n == want);
      if (!n) break;
      got.append(big.data(), *n);
    }
    co_await s.join();
    co_return got;
  }(p, text));
  EXPECT_TRUE(got == text) << "got " << got.size() << " bytes of " << text.size();
}

TEST_P(BufferedStream, BufferedBytesAfterAHeaderThenRawReads) {
  socket_pair p;
  const std::string body(10000, 'q');
  send_now(p.b, "CONNECT x\r\n\r\n" + body.substr(0, 100));
  auto got = run([](socket_pair& p, std::string body) -> task<std::string> {
    buffered_stream in(p.a);
    auto header = co_await in.read_until("\r\n\r\n");
    EXPECT_TRUE(header && *header == "CONNECT x\r\n\r\n");
    // The header arrived with the start of the body in one receive: it is buffered.
    std::string got(in.buffered());
    EXPECT_EQ(got, body.substr(0, 100));
    in.consume(got.size());
    EXPECT_TRUE(in.buffered().empty());
    // From here on the protocol reads the socket directly.
    scope s;
    s.spawn(send_later(p.b, body.substr(100), 5ms));
    std::array<char, 4096> buf{};
    while (got.size() < body.size()) {
      auto n = co_await p.a.recv(buf);
      EXPECT_TRUE(n && *n > 0);
      if (!n || *n == 0) break;
      got.append(buf.data(), *n);
    }
    co_await s.join();
    co_return got;
  }(p, body));
  EXPECT_EQ(got, body);
}

TEST_P(BufferedStream, ReadSomeHandsOutBufferedBytesFirst) {
  socket_pair p;
  send_now(p.b, "head\nabcdefgh");
  run([](socket_pair& p) -> task<void> {
    buffered_stream in(p.a);
    auto head = co_await in.read_line();
    EXPECT_TRUE(head && *head == "head");
    std::array<char, 3> small{};
    auto a = co_await in.read_some(small);
    EXPECT_TRUE(a && *a == 3u && std::string_view(small.data(), 3) == "abc");
    std::array<char, 64> buf{};
    auto b = co_await in.read_some(buf);
    EXPECT_TRUE(b && *b == 5u && std::string_view(buf.data(), 5) == "defgh");
    send_now(p.b, "direct");
    auto c = co_await in.read_some(buf);
    EXPECT_TRUE(c && *c == 6u && std::string_view(buf.data(), 6) == "direct");
  }(p));
}

TEST_P(BufferedStream, AStopMidLineLosesNothing) {
  socket_pair p;
  send_now(p.b, "part");
  run([](socket_pair& p) -> task<void> {
    buffered_stream in(p.a);
    std::stop_source stop;
    scope s;
    s.spawn(stop_after(stop, 20ms));
    auto stopped = co_await in.read_line().with_stop(stop.get_token());
    co_await s.join();
    EXPECT_FALSE(stopped);
    if (stopped) co_return;
    EXPECT_EQ(stopped.error(), std::errc::operation_canceled);
    EXPECT_EQ(in.buffered(), "part");
    // Stopped before it starts: cancelled at once, unless the buffer already answers.
    auto again = co_await in.read_line().with_stop(stop.get_token());
    EXPECT_FALSE(again);
    send_now(p.b, "ial line\nnext\n");
    auto line = co_await in.read_line();
    EXPECT_TRUE(line && *line == "partial line") << (line ? std::string(*line) : error_text(line.error()));
    auto next = co_await in.read_line().with_stop(stop.get_token());
    EXPECT_TRUE(next && *next == "next") << "buffered lines are returned even after a stop";
  }(p));
}

TEST_P(BufferedStream, ATimeoutMidExactReadLosesNothing) {
  socket_pair p;
  send_now(p.b, "12345");
  run([](socket_pair& p) -> task<void> {
    buffered_stream in(p.a);
    auto timed = co_await with_timeout(in.read_exact(8), 20ms);
    EXPECT_FALSE(timed);
    EXPECT_EQ(timed.error(), std::errc::timed_out);
    EXPECT_EQ(in.buffered(), "12345");
    scope s;
    s.spawn(send_later(p.b, "678", 5ms));
    auto whole = co_await with_timeout(in.read_exact(8), 5s);
    EXPECT_TRUE(whole && *whole == "12345678");
    co_await s.join();
  }(p));
}

TEST_P(BufferedStream, CancelOfTheSocketStopsAReadAndKeepsItsBytes) {
  socket_pair p;
  send_now(p.b, "abc");
  run([](socket_pair& p) -> task<void> {
    buffered_stream in(p.a);
    scope s;
    s.spawn([](stream_socket& a) -> task<void> {
      auto slept = co_await sleep_for(20ms);
      EXPECT_TRUE(slept);
      a.cancel();
    }(p.a));
    auto stopped = co_await in.read_until("\n");
    co_await s.join();
    EXPECT_FALSE(stopped);
    EXPECT_EQ(stopped.error(), std::errc::operation_canceled);
    EXPECT_EQ(in.buffered(), "abc");
  }(p));
}

TEST_P(BufferedStream, AStoppedReadIntoACallersBufferCountsWhatArrived) {
  socket_pair p;
  send_now(p.b, "xyz");
  run([](socket_pair& p) -> task<void> {
    buffered_stream in(p.a);
    std::array<char, 10> buf{};
    auto part = co_await with_timeout(in.read_exact(buf), 20ms);
    EXPECT_TRUE(part && *part == 3u) << "bytes received before the timeout are counted";
    EXPECT_EQ(std::string_view(buf.data(), 3), "xyz");
    auto none = co_await with_timeout(in.read_exact(buf), 10ms);
    EXPECT_FALSE(none);
    EXPECT_EQ(none.error(), std::errc::timed_out);
  }(p));
}

TEST_P(BufferedStream, APeerResetIsReportedAndEarlierLinesAreKept) {
  auto l = listen_loopback();
  auto at = address_of(l);
  run([](stream_listener& l, socket_address at) -> task<void> {
    auto c = co_await stream_socket::connect(at);
    auto s = co_await l.accept();
    EXPECT_TRUE(c && s);
    if (!c || !s) co_return;
    send_now(*c, "one\ntwo");
    linger lg{1, 0};  // close with RST
    ::setsockopt(c->native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    auto slept = co_await sleep_for(5ms);
    EXPECT_TRUE(slept);
    buffered_stream in(*s);
    auto one = co_await in.read_line();
    EXPECT_TRUE(one && *one == "one");
    *c = stream_socket();
    auto two = co_await in.read_line();
    EXPECT_FALSE(two);
    EXPECT_EQ(two.error(), std::errc::connection_reset) << two.error().message();
    EXPECT_EQ(in.buffered(), "two");
  }(l, at));
}

TEST_P(BufferedStream, AResetAfterAShortCountIsReportedByTheNextRead) {
  auto l = listen_loopback();
  auto at = address_of(l);
  run([](stream_listener& l, socket_address at) -> task<void> {
    auto c = co_await stream_socket::connect(at);
    auto s = co_await l.accept();
    EXPECT_TRUE(c && s);
    if (!c || !s) co_return;
    send_now(*c, "abc");
    linger lg{1, 0};
    ::setsockopt(c->native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    *c = stream_socket();  // RST after the three bytes
    auto slept = co_await sleep_for(5ms);
    EXPECT_TRUE(slept);
    buffered_stream in(*s);
    std::array<char, 10> buf{};
    auto part = co_await in.read_exact(buf);
    EXPECT_TRUE(part && *part == 3u) << "the bytes before the reset are counted";
    // The kernel reports a reset once; the short count above hid it, the next read tells.
    auto next = co_await in.read_line();
    EXPECT_FALSE(next);
    EXPECT_EQ(next.error(), std::errc::connection_reset) << next.error().message();
    auto after = co_await in.read_line();
    EXPECT_FALSE(after);
    EXPECT_EQ(after.error(), errc::end_of_stream) << after.error().message();
  }(l, at));
}

// The same when the protocol goes on with raw reads on the socket: the reset the
// buffered read's short count hid is the socket's next recv error, not a clean end.
TEST_P(BufferedStream, AResetHiddenByABufferedReadIsReportedByTheSocketsNextRecv) {
  auto l = listen_loopback();
  auto at = address_of(l);
  run([](stream_listener& l, socket_address at) -> task<void> {
    auto c = co_await stream_socket::connect(at);
    auto s = co_await l.accept();
    EXPECT_TRUE(c && s);
    if (!c || !s) co_return;
    send_now(*c, "abc");
    linger lg{1, 0};
    ::setsockopt(c->native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    *c = stream_socket();  // RST after the three bytes
    auto slept = co_await sleep_for(5ms);
    EXPECT_TRUE(slept);
    std::array<char, 10> buf{};
    {
      buffered_stream in(*s);
      auto part = co_await in.read_exact(buf);
      EXPECT_TRUE(part && *part == 3u) << "the bytes before the reset are counted";
    }
    auto next = co_await s->recv(buf);
    EXPECT_FALSE(next) << "got " << next.value_or(0) << " bytes: the reset was lost";
    EXPECT_EQ(next.error(), std::errc::connection_reset) << next.error().message();
  }(l, at));
}

// Records "<n>\n" (or "\r\n") + n bytes; `wire` is their concatenation, `ends[i]` the
// wire offset just past record i.
struct record_stream {
  std::vector<std::string> records;
  std::vector<std::size_t> ends;
  std::string wire;
};
record_stream make_records(std::mt19937_64& rng, int count) {
  record_stream r;
  for (int i = 0; i < count; ++i) {
    std::string payload(rng() % 300, '\0');
    for (char& c : payload) c = static_cast<char>('a' + rng() % 26);
    if (rng() % 10 == 0) payload.assign(3000 + rng() % 3000, static_cast<char>('A' + i % 26));
    r.wire += std::to_string(payload.size()) + (rng() % 2 ? "\r\n" : "\n") + payload;
    r.ends.push_back(r.wire.size());
    r.records.push_back(std::move(payload));
  }
  return r;
}

// Sends wire[0, cut) in random pieces at a random pace; then shuts down, or resets.
task<void> send_records(stream_socket& w, std::string_view wire, std::size_t cut, bool reset, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < cut;) {
    const std::size_t n = std::min<std::size_t>(1 + rng() % 700, cut - i);
    auto sent = co_await w.send_all(wire.substr(i, n));
    EXPECT_TRUE(sent && *sent == n);
    if (!sent || *sent != n) break;
    i += n;
    if (rng() % 4 == 0) {
      auto slept = co_await sleep_for(std::chrono::microseconds(rng() % 1500));
      EXPECT_TRUE(slept);
    }
  }
  if (reset) {
    linger lg{1, 0};
    ::setsockopt(w.native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    w = stream_socket();
    co_return;
  }
  auto shut = co_await w.shutdown();
  EXPECT_TRUE(shut);
}

struct read_outcome {
  std::vector<std::string> got;
  std::error_code end;  ///< what ended the reading (not a timeout)
  int interrupted = 0;  ///< reads cut short by a timeout, then retried
};

// Reads records with every read under a random short timeout, retrying those that
// time out, until a read fails otherwise.
task<void> read_records(buffered_stream& in, std::uint64_t seed, read_outcome& o) {
  std::mt19937_64 rng(seed);
  std::vector<char> big(8000);
  auto deadline = [&rng] { return std::chrono::microseconds(rng() % 800); };
  for (;;) {
    auto header = co_await with_timeout(in.read_line(16), deadline());
    if (!header && header.error() == std::errc::timed_out) {
      ++o.interrupted;
      continue;
    }
    if (!header) {
      o.end = header.error();
      co_return;
    }
    const std::size_t n = std::stoul(std::string(*header));
    std::string payload;
    if (n <= in.capacity() && rng() % 2 == 0) {
      for (;;) {
        auto body = co_await with_timeout(in.read_exact(n), deadline());
        if (body) {
          payload = *body;
          break;
        }
        if (body.error() != std::errc::timed_out) {
          o.end = body.error();
          co_return;
        }
        ++o.interrupted;
      }
    } else {
      while (payload.size() < n) {
        auto got = co_await with_timeout(in.read_exact(mutable_buffer(big.data(), n - payload.size())), deadline());
        if (got) {
          payload.append(big.data(), *got);
          continue;
        }
        if (got.error() != std::errc::timed_out) {
          o.end = got.error();
          co_return;
        }
        ++o.interrupted;
      }
    }
    o.got.push_back(std::move(payload));
  }
}

// Records sent in random pieces at a random pace, read by a reader whose reads are cut
// short by random timeouts: the records must come out whole and in order. Then rounds
// where the writer resets the connection at a random point: what was read is a prefix
// of the records, and the reading ends with connection_reset.
TEST_P(BufferedStream, SeededRandomStopsAndResetsNeverLoseOrReorderBytes) {
  const std::uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const record_stream rs = make_records(rng, 300);
  {
    socket_pair p;
    buffered_stream in(p.a, 512 + rng() % 2048);
    read_outcome o;
    run([](socket_pair& p, buffered_stream& in, const record_stream& rs, std::uint64_t seed,
           read_outcome& o) -> task<void> {
      co_await when_all(send_records(p.b, rs.wire, rs.wire.size(), false, seed + 1), read_records(in, seed + 2, o));
    }(p, in, rs, seed, o));
    EXPECT_EQ(o.end, errc::end_of_stream) << o.end.message();
    EXPECT_TRUE(in.buffered().empty());
    EXPECT_EQ(o.got.size(), rs.records.size());
    EXPECT_TRUE(o.got == rs.records) << "records differ";
    std::printf("%d reads interrupted by a timeout\n", o.interrupted);
  }
  auto l = listen_loopback();
  auto at = address_of(l);
  for (int round = 0; round < 5; ++round) {
    const std::size_t cut = 1 + rng() % rs.wire.size();
    SCOPED_TRACE("round " + std::to_string(round) + ", reset after " + std::to_string(cut) + " bytes");
    read_outcome o;
    run([](stream_listener& l, socket_address at, const record_stream& rs, std::size_t cut, std::uint64_t seed,
           read_outcome& o) -> task<void> {
      auto c = co_await stream_socket::connect(at);
      auto s = co_await l.accept();
      EXPECT_TRUE(c && s);
      if (!c || !s) co_return;
      buffered_stream in(*s, 1024);
      co_await when_all(send_records(*c, rs.wire, cut, true, seed + 3), read_records(in, seed + 4, o));
    }(l, at, rs, cut, seed + static_cast<std::uint64_t>(round), o));
    EXPECT_EQ(o.end, std::errc::connection_reset) << o.end.message();
    EXPECT_LE(o.got.size(), rs.records.size());
    if (!o.got.empty()) {
      EXPECT_LE(rs.ends[o.got.size() - 1], cut) << "a record the writer never sent";
    }
    EXPECT_TRUE(std::equal(o.got.begin(), o.got.end(), rs.records.begin())) << "not a prefix of the records";
  }
}

RINGIO_ALL_BACKENDS(BufferedStream);

}  // namespace
