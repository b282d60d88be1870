// SPDX-License-Identifier: Apache-2.0
// batching_writer with io_context_options::send_bundles on and off, on every backend,
// held to its promise: the peer gets each message whole, in order, never split or
// interleaved, minus only those a policy dropped. Framed messages (index, length, bytes
// that depend on both) let the peer's byte stream be parsed back into messages. Thousands
// queued (more than one pass's ring holds), 0 and 1 byte, over 64 KiB, over the socket
// buffer, string_view and shared messages, slow and stalled peers, seeded random stops,
// closes, resets and destructions mid-send, writers made and destroyed by the thousand
// (and more at once than locked memory allows rings for), receive pools beside them,
// writers on several loops, the environment variable.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"
#include "support/send_bundle_fixture.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

using text = std::shared_ptr<const std::string>;

constexpr std::uint32_t gap_index = 0xffffffffu;

// A framed message: 4 bytes of index, 4 of payload length, then payload bytes that
// depend on the index and their position.
std::string framed(std::uint32_t i, std::size_t payload) {
  std::string s(8 + payload, '\0');
  const auto len = static_cast<std::uint32_t>(payload);
  std::memcpy(s.data(), &i, 4);
  std::memcpy(s.data() + 4, &len, 4);
  for (std::size_t j = 0; j < payload; ++j) s[8 + j] = static_cast<char>((i * 131 + j * 7 + 3) & 0xff);
  return s;
}

text shared(std::uint32_t i, std::size_t payload) { return std::make_shared<const std::string>(framed(i, payload)); }

// The peer's stream parsed back into messages.
struct parsed {
  std::vector<std::uint32_t> indices;  // whole messages, in order (gap notices included)
  std::uint64_t gap_total = 0;         // the counts the gap notices carried
  std::size_t tail = 0;                // bytes of a last message cut short
  std::string error;                   // empty when every whole message is intact
};

parsed parse(std::string_view s) {
  parsed p;
  std::size_t pos = 0;
  while (pos < s.size()) {
    if (s.size() - pos < 8) {
      p.tail = s.size() - pos;
      break;
    }
    std::uint32_t i = 0, len = 0;
    std::memcpy(&i, s.data() + pos, 4);
    std::memcpy(&len, s.data() + pos + 4, 4);
    if (len > (std::uint32_t{1} << 26)) {
      p.error = "implausible length " + std::to_string(len) + " at byte " + std::to_string(pos);
      return p;
    }
    const std::size_t have = std::min<std::size_t>(len, s.size() - pos - 8);
    if (i == gap_index) {
      if (have < len) {
        p.tail = s.size() - pos;
        break;
      }
      std::uint64_t n = 0;
      std::memcpy(&n, s.data() + pos + 8, std::min<std::size_t>(len, 8));
      p.gap_total += n;
    } else {
      for (std::size_t j = 0; j < have; ++j)
        if (s[pos + 8 + j] != static_cast<char>((i * 131 + j * 7 + 3) & 0xff)) {
          p.error = "message " + std::to_string(i) + " byte " + std::to_string(j) + " (stream byte " +
                    std::to_string(pos + 8 + j) + ") is wrong";
          return p;
        }
      if (have < len) {
        p.tail = s.size() - pos;
        break;
      }
    }
    p.indices.push_back(i);
    pos += 8 + len;
  }
  return p;
}

// Indices 0, 1, 2, ... in order with nothing missing (a prefix of `n` when `n` is given).
::testing::AssertionResult consecutive(const parsed& p, std::size_t n) {
  if (!p.error.empty()) return ::testing::AssertionFailure() << p.error;
  for (std::size_t k = 0; k < p.indices.size(); ++k)
    if (p.indices[k] != k)
      return ::testing::AssertionFailure() << "message " << k << " of the stream has index " << p.indices[k];
  if (p.indices.size() > n) return ::testing::AssertionFailure() << p.indices.size() << " messages, more than " << n;
  return ::testing::AssertionSuccess();
}

void set_buffers(int fd, int bytes) {
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}
void set_buffers(stream_socket& s, int bytes) { set_buffers(s.native_handle(), bytes); }

struct tcp_pair {
  stream_socket writer, reader;
};
// Small buffers on loopback TCP: the writer's segment size is bounded by half the
// largest window the reader ever advertised (64 KiB on loopback before the buffers
// shrink, or at the handshake before the kernel learns the real overhead of its
// buffers). When the window then stays below that segment size, TCP sends one window
// per persist timeout (about 200 ms, some 40 to 150 KB/s), however fast both sides
// are. So the reader's buffers and an Ethernet-sized segment (TCP_MAXSEG, announced in
// its SYN) are set before the handshake: the window then holds several segments.
task<std::optional<tcp_pair>> connect_pair(int buffers) {
  auto l = listen_loopback();
  std::optional<stream_socket> reader;
  if (buffers > 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    if (fd < 0) co_return std::nullopt;
    set_buffers(fd, buffers);
    const int segment = 1460;
    EXPECT_EQ(::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &segment, sizeof segment), 0);
    const auto to = address_of(l);
    // The listener's backlog completes the handshake, so a blocking connect returns at once.
    EXPECT_EQ(::connect(fd, to.native(), to.size()), 0);
    auto adopted = stream_socket::adopt(fd);
    EXPECT_TRUE(adopted) << adopted.error().message();
    if (!adopted) {
      ::close(fd);
      co_return std::nullopt;
    }
    reader = std::move(*adopted);
  } else {
    auto c = co_await stream_socket::connect(address_of(l));
    EXPECT_TRUE(c) << c.error().message();
    if (!c) co_return std::nullopt;
    reader = std::move(*c);
  }
  auto s = co_await l.accept();
  EXPECT_TRUE(s) << s.error().message();
  if (!s) co_return std::nullopt;
  if (buffers > 0) set_buffers(*s, buffers);
  co_return tcp_pair{std::move(*s), std::move(*reader)};
}

// Reads until the end of the stream, an error or 10 s of silence; `slow` pauses now and
// then and sometimes reads a single byte.
task<std::string> read_all(stream_socket& s, bool slow) {
  std::string got;
  std::vector<char> buf(64 * 1024);
  for (int reads = 1;; ++reads) {
    std::span<char> into(buf);
    if (slow && reads % 5 == 0) into = into.first(1);
    auto n = co_await with_timeout(s.recv(into), 10s);
    if (!n || *n == 0) co_return got;
    got.append(buf.data(), *n);
    if (slow && reads % 8 == 0) (void)co_await sleep_for(1ms);
  }
}

template <class M>
task<void> run_into(batching_writer<M>& w, result<void>& out) {
  out = co_await w.run();
}

// Shuts the writer's side once run() has returned, so that the peer sees the end.
task<void> shut_after(result<void>& ran, stream_socket& s) {
  while (!ran && ran.error() == std::errc::interrupted) (void)co_await sleep_for(1ms);
  ::shutdown(s.native_handle(), SHUT_WR);
}

task<void> collect(stream_socket& s, std::string& out) { out = co_await read_all(s, false); }

// `n` writers of shared messages, each on a socket pair with 8 KiB of send buffer and a
// reader that collects everything until the writer's side is shut.
struct writer_fleet {
  explicit writer_fleet(std::size_t n) : ran(n, unexpected(std::errc::interrupted)), got(n) {}
  void start(scope& sc) {
    for (std::size_t k = 0; k < ran.size(); ++k) {
      pairs.push_back(std::make_unique<socket_pair>());
      set_buffers(pairs.back()->a, 8192);
      ws.push_back(std::make_unique<batching_writer<text>>(
          pairs.back()->a, batching_writer_options{.max_messages = 1 << 12, .max_bytes = std::size_t{1} << 30}));
      sc.spawn(run_into(*ws.back(), ran[k]));
      sc.spawn(collect(pairs.back()->b, got[k]));
      sc.spawn(shut_after(ran[k], pairs.back()->a));
    }
  }
  // Writer k's run() succeeded and its reader got messages 0..count-1 in order, once each.
  [[nodiscard]] bool delivered(std::size_t k, std::size_t count) const {
    const parsed r = parse(got[k]);
    return ran[k] && consecutive(r, count) && r.indices.size() == count;
  }
  std::vector<std::unique_ptr<socket_pair>> pairs;
  std::vector<std::unique_ptr<batching_writer<text>>> ws;
  std::vector<result<void>> ran;
  std::vector<std::string> got;
};

std::size_t random_payload(std::mt19937_64& rng) {
  const auto kind = rng() % 20;
  if (kind < 4) return 0;
  if (kind < 8) return 1;
  if (kind < 18) return 2 + rng() % 2000;
  return 65537 + rng() % (200 * 1024);
}

class SendBundleAttack : public send_bundle_fixture {};

// Five thousand messages queued before run() starts (far more than one pass, and its
// ring, holds), with empty messages between them: all arrive whole and in order.
TEST_P(SendBundleAttack, ThousandsQueuedBeyondOnePassArriveWholeAndInOrder) {
  const std::uint64_t seed = test_seed();
  run([](std::uint64_t seed) -> task<void> {
    auto p = co_await connect_pair(64 * 1024);
    if (!p) co_return;
    batching_writer<text> w(p->writer, {.max_messages = 1 << 16, .max_bytes = std::size_t{1} << 30});
    std::mt19937_64 rng(seed);
    const std::uint32_t n = 5000;
    auto empty = std::make_shared<const std::string>();
    for (std::uint32_t i = 0; i < n; ++i) {
      EXPECT_TRUE(w.try_write(shared(i, random_payload(rng))));
      for (auto e = rng() % 3; e > 0; --e) EXPECT_TRUE(w.try_write(empty));
    }
    w.close();
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    sc.spawn(shut_after(ran, p->writer));
    std::string got = co_await read_all(p->reader, false);
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    const parsed r = parse(got);
    EXPECT_TRUE(consecutive(r, n));
    EXPECT_EQ(r.indices.size(), n);
    EXPECT_EQ(r.tail, 0u);
    EXPECT_EQ(empty.use_count(), 1) << "empty messages still held after run() returned";
  }(seed));
}

// Passes of nothing but empty messages (64 of them and more), then single bytes.
TEST_P(SendBundleAttack, PassesOfEmptyMessagesOnly) {
  run([]() -> task<void> {
    socket_pair sp;
    batching_writer<std::string> w(sp.a, {.max_messages = 1 << 14, .max_bytes = 1 << 20});
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 200; ++i) EXPECT_TRUE(w.try_write(std::string()));
      EXPECT_TRUE(w.try_write(std::string(1, static_cast<char>('a' + round))));
    }
    w.close();
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    sc.spawn(shut_after(ran, sp.a));
    std::string got = co_await read_all(sp.b, false);
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    EXPECT_EQ(got, "abc");
  }());
}

// string_view messages over storage the caller keeps until run() returns, sent to a
// slow reader behind 4 KiB socket buffers.
TEST_P(SendBundleAttack, StringViewMessagesToASlowReader) {
  const std::uint64_t seed = test_seed();
  run([](std::uint64_t seed) -> task<void> {
    auto p = co_await connect_pair(4096);
    if (!p) co_return;
    std::mt19937_64 rng(seed);
    std::vector<std::string> storage;
    for (std::uint32_t i = 0; i < 600; ++i) storage.push_back(framed(i, random_payload(rng)));
    batching_writer<std::string_view> w(p->writer, {.max_messages = 32, .max_bytes = 256 * 1024});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    auto producer = [](batching_writer<std::string_view>& w, const std::vector<std::string>& storage) -> task<void> {
      for (std::size_t i = 0; i < storage.size(); ++i) {
        auto r = co_await w.write(std::string_view(storage[i]));
        EXPECT_TRUE(r) << r.error().message();
        if (!r) break;
      }
      w.close();
    };
    sc.spawn(producer(w, storage));
    sc.spawn(shut_after(ran, p->writer));
    std::string got = co_await read_all(p->reader, true);
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    const parsed r = parse(got);
    EXPECT_TRUE(consecutive(r, storage.size()));
    EXPECT_EQ(r.indices.size(), storage.size());
  }(seed));
}

// One set of shared messages (some over 64 KiB and over the socket buffers) queued to
// forty writers at once: every peer gets all of them, and the messages are released
// when the writers are done.
TEST_P(SendBundleAttack, SharedMessagesToManyWritersAtOnce) {
  const std::uint64_t seed = test_seed();
  run([](std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    std::vector<text> msgs;
    for (std::uint32_t i = 0; i < 300; ++i) msgs.push_back(shared(i, random_payload(rng)));
    writer_fleet fleet(40);
    scope sc;
    fleet.start(sc);
    for (const auto& m : msgs)
      for (auto& w : fleet.ws) EXPECT_TRUE(w->try_write(m));
    for (auto& w : fleet.ws) w->close();
    co_await sc.join();
    for (std::size_t k = 0; k < fleet.ran.size(); ++k)
      EXPECT_TRUE(fleet.delivered(k, msgs.size()))
          << "writer " << k << ": run() " << (fleet.ran[k] ? "ok" : fleet.ran[k].error().message());
    fleet.ws.clear();
    for (const auto& m : msgs) EXPECT_EQ(m.use_count(), 1);
  }(seed));
}

// Messages larger than the socket buffers (up to 1 MiB) from two producers waiting for
// room, to a reader that sometimes takes a single byte: every short send resumes
// exactly where it stopped.
TEST_P(SendBundleAttack, MessagesOverTheSocketBufferToATrickleReader) {
  const std::uint64_t seed = test_seed();
  run([](std::uint64_t seed) -> task<void> {
    auto p = co_await connect_pair(4096);
    if (!p) co_return;
    batching_writer<std::string> w(p->writer, {.max_messages = 8, .max_bytes = 512 * 1024});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    auto producer = [](batching_writer<std::string>& w, std::uint64_t seed) -> task<void> {
      std::mt19937_64 rng(seed);
      for (std::uint32_t i = 0; i < 60; ++i) {
        const std::size_t size = rng() % 3 == 0 ? 300 * 1024 + rng() % (700 * 1024) : rng() % 3000;
        auto r = co_await w.write(framed(i, size));
        EXPECT_TRUE(r) << r.error().message();
        if (!r) break;
      }
      w.close();
    };
    sc.spawn(producer(w, seed));
    sc.spawn(shut_after(ran, p->writer));
    std::string got = co_await read_all(p->reader, true);
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    const parsed r = parse(got);
    EXPECT_TRUE(consecutive(r, 60));
    EXPECT_EQ(r.indices.size(), 60u);
    EXPECT_EQ(r.tail, 0u);
  }(seed));
}

// Seeded rounds: messages queue and a slow reader reads while, after a random delay,
// the writer is stopped, closed, destroyed, or the peer resets. The peer has every
// message whole and in order (all of them after a close; a prefix, the last one perhaps
// cut, after a stop or destruction), and run() returns what the header promises.
TEST_P(SendBundleAttack, RandomStopsClosesDestructionsAndResets) {
  const std::uint64_t seed = test_seed();
  run([](std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 24; ++round) {
      auto p = co_await connect_pair(8192 + static_cast<int>(rng() % 32768));
      if (!p) co_return;
      auto w = std::make_unique<batching_writer<std::string>>(
          p->writer, batching_writer_options{.max_messages = 1 << 12, .max_bytes = std::size_t{1} << 30});
      const std::uint32_t n = 100 + static_cast<std::uint32_t>(rng() % 400);
      for (std::uint32_t i = 0; i < n; ++i) EXPECT_TRUE(w->try_write(framed(i, random_payload(rng))));
      const int action = static_cast<int>(rng() % 4);  // 0 stop, 1 close, 2 destroy, 3 reset
      const auto delay = std::chrono::microseconds(rng() % 20000);
      result<void> ran = unexpected(std::errc::interrupted);
      std::string got;
      scope runner;
      runner.spawn(run_into(*w, ran));
      scope readers;
      if (action != 3) {
        auto reader = [](stream_socket& s, std::string& out) -> task<void> { out = co_await read_all(s, true); };
        readers.spawn(reader(p->reader, got));
      }
      (void)co_await sleep_for(delay);
      switch (action) {
        case 0:
          runner.request_stop();
          break;
        case 1:
          w->close();
          break;
        case 2:
          w.reset();
          // Memory the writer and freed messages held is written over at once.
          for (int k = 0; k < 64; ++k) {
            std::string junk(96 * 1024, static_cast<char>(0x5a));
            (void)junk;
          }
          break;
        case 3: {
          ::linger reset{.l_onoff = 1, .l_linger = 0};
          ::setsockopt(p->reader.native_handle(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
          { stream_socket gone = std::move(p->reader); }
          (void)co_await sleep_for(1ms);
          w->close();
          break;
        }
      }
      co_await runner.join();
      ::shutdown(p->writer.native_handle(), SHUT_WR);
      co_await readers.join();
      const parsed r = parse(got);
      SCOPED_TRACE("round " + std::to_string(round) + " action " + std::to_string(action));
      switch (action) {
        case 0:
        case 2:
          EXPECT_FALSE(ran);
          if (!ran) {
            EXPECT_EQ(ran.error(), std::errc::operation_canceled) << ran.error().message();
          }
          EXPECT_TRUE(consecutive(r, n));
          break;
        case 1:
          EXPECT_TRUE(ran) << ran.error().message();
          EXPECT_TRUE(consecutive(r, n));
          EXPECT_EQ(r.indices.size(), n);
          EXPECT_EQ(r.tail, 0u);
          break;
        case 3:
          EXPECT_TRUE(ran || ran.error() == std::errc::connection_reset || ran.error() == std::errc::broken_pipe)
              << ran.error().message();
          if (w) {
            EXPECT_EQ(w->queued(), 0u);
          }
          break;
      }
      if (w) {
        auto again = w->try_write(framed(0, 1));
        EXPECT_FALSE(again);
      }
    }
  }(seed));
}

// drop_oldest against a peer that reads nothing for a while: the peer gets a
// subsequence of the messages in order, each whole, with gap notices whose counts add
// up to dropped().
TEST_P(SendBundleAttack, DropOldestToAStalledPeerKeepsOrderAndCountsTheGaps) {
  const std::uint64_t seed = test_seed();
  run([](std::uint64_t seed) -> task<void> {
    auto p = co_await connect_pair(8192);
    if (!p) co_return;
    batching_writer<text> w(p->writer,
                            {.max_messages = 16, .max_bytes = 64 * 1024, .when_full = overflow_policy::drop_oldest},
                            [](std::uint64_t missed) {
                              std::string s(16, '\0');
                              const std::uint32_t i = gap_index, len = 8;
                              std::memcpy(s.data(), &i, 4);
                              std::memcpy(s.data() + 4, &len, 4);
                              std::memcpy(s.data() + 8, &missed, 8);
                              return std::make_shared<const std::string>(std::move(s));
                            });
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    std::mt19937_64 rng(seed);
    const std::uint32_t n = 3000;
    for (std::uint32_t i = 0; i < n; ++i) {
      EXPECT_TRUE(w.try_write(shared(i, random_payload(rng) % 5000)));
      if (i % 50 == 0) co_await yield();
    }
    w.close();
    sc.spawn(shut_after(ran, p->writer));
    (void)co_await sleep_for(20ms);
    std::string got = co_await read_all(p->reader, false);
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    const parsed r = parse(got);
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.tail, 0u);
    std::uint32_t last = 0;
    bool first = true;
    std::size_t messages = 0;
    for (std::uint32_t i : r.indices) {
      if (i == gap_index) continue;
      ++messages;
      EXPECT_TRUE(first || i > last) << i << " after " << last;
      first = false;
      last = i;
    }
    EXPECT_EQ(messages + w.dropped(), n);
    EXPECT_EQ(r.gap_total, w.dropped());
  }(seed));
}

// The fail policy against a stalled peer: run() returns no_buffer_space and the peer
// has a prefix of the stream (the last message perhaps cut).
TEST_P(SendBundleAttack, FailPolicyLeavesAPrefix) {
  const std::uint64_t seed = test_seed();
  run([](std::uint64_t seed) -> task<void> {
    auto p = co_await connect_pair(8192);
    if (!p) co_return;
    batching_writer<std::string> w(p->writer,
                                   {.max_messages = 32, .max_bytes = 256 * 1024, .when_full = overflow_policy::fail});
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    std::mt19937_64 rng(seed);
    std::uint32_t i = 0;
    for (; i < 100000; ++i) {
      auto r = w.try_write(framed(i, random_payload(rng)));
      if (!r) {
        EXPECT_EQ(r.error(), std::errc::no_buffer_space);
        break;
      }
      if (i % 8 == 0) co_await yield();
    }
    co_await sc.join();
    EXPECT_EQ(ran.error(), std::errc::no_buffer_space);
    ::shutdown(p->writer.native_handle(), SHUT_WR);
    std::string got = co_await read_all(p->reader, false);
    EXPECT_TRUE(consecutive(parse(got), i));
  }(seed));
}

// Owned messages (over the malloc threshold, so their memory goes back to the system
// when freed) in flight when the writer is destroyed; the loop then allocates and
// writes over freed memory while the peer reads: the peer still has a prefix of the
// stream, intact.
TEST_P(SendBundleAttack, DestroyedMidSendTheKernelNeverReadsFreedMessages) {
  run([]() -> task<void> {
    for (int round = 0; round < 6; ++round) {
      auto p = co_await connect_pair(16384);
      if (!p) co_return;
      auto w = std::make_unique<batching_writer<std::string>>(
          p->writer, batching_writer_options{.max_messages = 1 << 10, .max_bytes = std::size_t{1} << 30});
      for (std::uint32_t i = 0; i < 40; ++i) EXPECT_TRUE(w->try_write(framed(i, 200 * 1024 + i)));
      result<void> ran = unexpected(std::errc::interrupted);
      scope sc;
      sc.spawn(run_into(*w, ran));
      (void)co_await sleep_for(std::chrono::milliseconds(2 + round * 3));
      w.reset();
      std::vector<std::string> junk;
      for (int k = 0; k < 80; ++k) junk.emplace_back(200 * 1024, static_cast<char>(0xa5));
      co_await sc.join();
      EXPECT_EQ(ran.error(), std::errc::operation_canceled);
      ::shutdown(p->writer.native_handle(), SHUT_WR);
      std::string got = co_await read_all(p->reader, false);
      EXPECT_TRUE(consecutive(parse(got), 40)) << "round " << round;
    }
  }());
}

// Three thousand writers made, run and destroyed one after another on one loop, with
// a sliding window of live ones destroyed out of order, and receive pools (their own
// buffer rings) made and destroyed among them: every message arrives, on both sides.
TEST_P(SendBundleAttack, WritersAndReceivePoolsComeAndGoByTheThousand) {
  const std::uint64_t seed = test_seed();
  run([](std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    struct live {
      std::unique_ptr<socket_pair> sp;
      std::unique_ptr<batching_writer<text>> w;
      result<void> ran = unexpected(std::errc::interrupted);
      std::uint32_t id = 0;
    };
    std::vector<std::unique_ptr<live>> window;
    std::vector<std::unique_ptr<buffer_pool>> pools;
    scope sc;
    int checked = 0;
    auto finish = [](live& l) -> task<void> {
      l.w->close();
      while (!l.ran && l.ran.error() == std::errc::interrupted) (void)co_await sleep_for(100us);
      EXPECT_TRUE(l.ran) << "writer " << l.id << ": " << l.ran.error().message();
      std::array<char, 64> buf;
      const std::string want = framed(l.id, 5) + framed(l.id + 1, 7);
      auto n = co_await with_timeout(l.sp->b.recv_exact(std::span(buf).first(want.size())), 10s);
      EXPECT_TRUE(n && *n == want.size()) << "writer " << l.id;
      if (n) {
        EXPECT_EQ(std::string(buf.data(), want.size()), want) << "writer " << l.id;
      }
    };
    for (std::uint32_t i = 0; i < 3000; ++i) {
      auto l = std::make_unique<live>();
      l->id = i * 2;
      l->sp = std::make_unique<socket_pair>();
      l->w = std::make_unique<batching_writer<text>>(l->sp->a);
      sc.spawn(run_into(*l->w, l->ran));
      EXPECT_TRUE(l->w->try_write(shared(l->id, 5)));
      EXPECT_TRUE(l->w->try_write(shared(l->id + 1, 7)));
      window.push_back(std::move(l));
      if (i % 97 == 0) {
        try {
          pools.push_back(std::make_unique<buffer_pool>(*io_context::current(), 16, 4096));
        } catch (const std::exception& e) {
          ADD_FAILURE() << "buffer_pool: " << e.what();
        }
      }
      if (pools.size() > 3) {
        // A receive through the oldest pool, then the pool goes.
        socket_pair rp;
        auto& pool = *pools.front();
        {
          multishot_receiver rx(rp.a, pool);
          const std::string msg = framed(i, 300);
          EXPECT_EQ(::send(rp.b.native_handle(), msg.data(), msg.size(), 0), static_cast<ssize_t>(msg.size()));
          std::string in;
          while (in.size() < msg.size()) {
            auto b = co_await with_timeout(rx.next(), 10s);
            EXPECT_TRUE(b);
            if (!b || b->empty()) break;
            in.append(reinterpret_cast<const char*>(b->data()), b->size());
          }
          EXPECT_EQ(in, msg) << "receive through a pool at writer " << i;
          ::shutdown(rp.b.native_handle(), SHUT_WR);
          for (;;) {
            auto b = co_await with_timeout(rx.next(), 10s);
            if (!b || b->empty()) break;
          }
        }
        pools.erase(pools.begin());
      }
      if (window.size() > 40) {
        const std::size_t k = rng() % window.size();
        co_await finish(*window[k]);
        window.erase(window.begin() + static_cast<std::ptrdiff_t>(k));
        ++checked;
      }
    }
    for (auto& l : window) {
      co_await finish(*l);
      ++checked;
    }
    co_await sc.join();
    window.clear();
    pools.clear();
    EXPECT_EQ(checked, 3000);
  }(seed));
}

// More writers running at once than locked memory allows rings for (each run() with
// send bundles registers a page): all of them still deliver everything.
TEST_P(SendBundleAttack, MoreWritersAtOnceThanRingsFitInLockedMemory) {
  run([]() -> task<void> {
    constexpr int writers = 3000;
    std::vector<std::unique_ptr<socket_pair>> pairs;
    std::vector<std::unique_ptr<batching_writer<text>>> ws;
    std::vector<result<void>> ran(writers, unexpected(std::errc::interrupted));
    scope sc;
    for (int k = 0; k < writers; ++k) {
      pairs.push_back(std::make_unique<socket_pair>());
      ws.push_back(std::make_unique<batching_writer<text>>(pairs.back()->a));
      sc.spawn(run_into(*ws.back(), ran[static_cast<std::size_t>(k)]));
    }
    co_await yield();
    for (int k = 0; k < writers; ++k) {
      EXPECT_TRUE(ws[static_cast<std::size_t>(k)]->try_write(shared(static_cast<std::uint32_t>(k), 3)));
      EXPECT_TRUE(ws[static_cast<std::size_t>(k)]->try_write(shared(static_cast<std::uint32_t>(k), 0)));
      ws[static_cast<std::size_t>(k)]->close();
    }
    co_await sc.join();
    int bad = 0;
    for (int k = 0; k < writers; ++k) {
      const std::string want = framed(static_cast<std::uint32_t>(k), 3) + framed(static_cast<std::uint32_t>(k), 0);
      std::array<char, 64> buf;
      auto n = co_await with_timeout(
          pairs[static_cast<std::size_t>(k)]->b.recv_exact(std::span(buf).first(want.size())), 10s);
      const bool ok =
          ran[static_cast<std::size_t>(k)] && n && *n == want.size() && std::string(buf.data(), want.size()) == want;
      if (!ok && bad++ < 5)
        ADD_FAILURE() << "writer " << k << ": run() "
                      << (ran[static_cast<std::size_t>(k)] ? "ok" : ran[static_cast<std::size_t>(k)].error().message())
                      << ", read " << (n ? std::to_string(*n) : n.error().message());
    }
    EXPECT_EQ(bad, 0);
  }());
}

// A single message over 1 GiB (one ring's load holds at most 1 GiB): it arrives whole.
TEST_P(SendBundleAttack, AMessageOverOneGibibyte) {
  struct sysinfo si {};
  ::sysinfo(&si);
  if (static_cast<unsigned long long>(si.freeram) * si.mem_unit < (6ull << 30))
    GTEST_SKIP() << "needs 6 GiB of free memory";
  if (backend() != backend_kind::uring || !bundles()) GTEST_SKIP() << "the bundle path only (slow elsewhere)";
  run([]() -> task<void> {
    socket_pair sp;
    const std::size_t size = (std::size_t{1} << 30) + (std::size_t{1} << 28) + 12345;
    auto big = std::make_shared<std::string>(size, '\0');
    for (std::size_t j = 0; j < size; ++j) (*big)[j] = static_cast<char>((j * 7 + j / 4096) & 0xff);
    batching_writer<text> w(sp.a, {.max_messages = 4, .max_bytes = std::size_t{4} << 30});
    EXPECT_TRUE(w.try_write(shared(1, 10)));
    EXPECT_TRUE(w.try_write(text(big)));
    EXPECT_TRUE(w.try_write(shared(2, 10)));
    w.close();
    result<void> ran = unexpected(std::errc::interrupted);
    scope sc;
    sc.spawn(run_into(w, ran));
    sc.spawn(shut_after(ran, sp.a));
    std::string head(18, '\0');
    auto h = co_await sp.b.recv_exact(std::span(head));
    EXPECT_TRUE(h);
    EXPECT_EQ(head, framed(1, 10));
    std::vector<char> buf(1 << 20);
    std::size_t pos = 0;
    std::size_t first_bad = SIZE_MAX;
    std::string rest;
    for (;;) {
      auto n = co_await with_timeout(sp.b.recv(std::span(buf)), 20s);
      if (!n || *n == 0) break;
      for (std::size_t k = 0; k < *n; ++k, ++pos) {
        if (pos < size) {
          if (first_bad == SIZE_MAX && buf[k] != static_cast<char>((pos * 7 + pos / 4096) & 0xff)) first_bad = pos;
        } else {
          rest.push_back(buf[k]);
        }
      }
    }
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    EXPECT_EQ(first_bad, SIZE_MAX) << "first wrong byte of the large message at " << first_bad;
    EXPECT_EQ(pos, size + 18);
    EXPECT_EQ(rest, framed(2, 10));
  }());
}

INSTANTIATE_TEST_SUITE_P(, SendBundleAttack,
                         ::testing::Combine(::testing::Values(backend_kind::uring, backend_kind::epoll,
                                                              backend_kind::uring_poll),
                                            ::testing::Bool()),
                         send_bundle_param_name);

// RINGIO_SEND_BUNDLES overrides the option both ways, as describe() shows.
TEST(SendBundleEnvironment, TheVariableOverridesTheOption) {
  const char* old = std::getenv("RINGIO_SEND_BUNDLES");
  const std::string saved = old != nullptr ? old : "";
  std::string d_on, d_off;
  try {
    ::setenv("RINGIO_SEND_BUNDLES", "0", 1);
    {
      io_context c(io_context_options{.backend = backend_kind::uring, .quiet = true, .send_bundles = true});
      d_off = c.describe();
    }
    ::setenv("RINGIO_SEND_BUNDLES", "1", 1);
    {
      io_context c(io_context_options{.backend = backend_kind::uring, .quiet = true, .send_bundles = false});
      d_on = c.describe();
    }
  } catch (const std::system_error& e) {
    if (old != nullptr) ::setenv("RINGIO_SEND_BUNDLES", saved.c_str(), 1);
    else ::unsetenv("RINGIO_SEND_BUNDLES");
    GTEST_SKIP() << "io_uring cannot start here: " << e.what();
  }
  if (old != nullptr) ::setenv("RINGIO_SEND_BUNDLES", saved.c_str(), 1);
  else ::unsetenv("RINGIO_SEND_BUNDLES");
  EXPECT_NE(d_off.find("send bundles off"), std::string::npos) << d_off;
  EXPECT_TRUE(d_on.find("send bundles yes") != std::string::npos ||
              d_on.find("send bundles unsupported") != std::string::npos)
      << d_on;
}

// Four loops on four threads, each with writers of its own, all queueing the same
// shared messages: every peer gets them all, and the messages are released.
TEST(SendBundleThreads, WritersOnSeveralLoopsShareMessages) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  std::vector<text> msgs;
  for (std::uint32_t i = 0; i < 200; ++i) msgs.push_back(shared(i, random_payload(rng)));
  std::atomic<int> failures{0};
  std::atomic<int> skipped{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::optional<io_context> c;
      try {
        c.emplace(io_context_options{
            .backend = t % 2 == 0 ? backend_kind::uring : backend_kind::epoll, .quiet = true, .send_bundles = true});
      } catch (const std::system_error&) {
        ++skipped;
        return;
      }
      sync_wait(*c, [](const std::vector<text>& msgs, std::atomic<int>& failures) -> task<void> {
        for (int round = 0; round < 5; ++round) {
          writer_fleet fleet(10);
          scope sc;
          fleet.start(sc);
          for (const auto& m : msgs)
            for (auto& w : fleet.ws)
              if (!w->try_write(m)) ++failures;
          for (auto& w : fleet.ws) w->close();
          co_await sc.join();
          for (std::size_t k = 0; k < fleet.ran.size(); ++k)
            if (!fleet.delivered(k, msgs.size())) ++failures;
        }
      }(msgs, failures));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (const auto& m : msgs) EXPECT_EQ(m.use_count(), 1);
  if (skipped.load() == 4) GTEST_SKIP() << "no backend could start here";
}

}  // namespace
