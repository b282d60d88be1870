// SPDX-License-Identifier: Apache-2.0
// Programs against ringio::batching_writer's public API and documented promises.
// Each test checks one promise of include/ringio/net/batching_writer.hpp,
// batching_writer_options.hpp or docs/guide.md, on every backend, over 127.0.0.1 TCP.
// The peer is a plain blocking descriptor read by a thread the test controls, so it can
// stall (never read: the kernel buffers fill), drain, or reset (SO_LINGER 0).
//
// Regression tests among them: a send that ends inside the first message of a batch
// (BatchingWriterPartialSend.*, and the big-message and close tests) once lost the rest of
// that std::string / std::vector<std::byte> message while run() succeeded; a gap notice
// that destroys the writer (DestroyFromInsideGapNoticeDoesNotTouchTheWriter) once wrote to
// the freed writer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "ringio/net/batching_writer.hpp"
#include "ringio/ringio.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// ---------------------------------------------------------------------------------------
// Helpers

// A connected TCP pair on 127.0.0.1 made by ringio: `w` (the writer's side, a ringio
// socket with a small send buffer) and `peer` (a raw blocking descriptor owned by the test,
// small receive buffer, 20 s receive timeout so nothing hangs forever).
struct tcp_pair {
  stream_socket w;
  int peer = -1;
  ~tcp_pair() {
    if (peer >= 0) ::close(peer);
  }
};

std::unique_ptr<tcp_pair> make_pair(io_context& ctx) {
  auto l = listen_loopback();
  auto p = std::make_unique<tcp_pair>();
  auto pr = sync_wait(ctx, [](stream_listener& l) -> task<std::pair<stream_socket, stream_socket>> {
    auto [c, s] = co_await when_all(stream_socket::connect(address_of(l)), l.accept());
    EXPECT_TRUE(c && s);
    co_return std::pair<stream_socket, stream_socket>{std::move(*c), std::move(*s)};
  }(l));
  p->w = std::move(pr.first);
  p->peer = pr.second.release();
  EXPECT_GE(p->peer, 0);
  int small = 4096;
  EXPECT_EQ(::setsockopt(p->w.native_handle(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  EXPECT_EQ(::setsockopt(p->peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  const int fl = ::fcntl(p->peer, F_GETFL);
  ::fcntl(p->peer, F_SETFL, fl & ~O_NONBLOCK);
  timeval tv{20, 0};
  ::setsockopt(p->peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return p;
}

// For a peer that reads (at once, or after a short stall): a receive buffer of 256 KiB, so that the writer's
// small send buffer alone splits the sends. A 4 KiB receive buffer is under two loopback
// segments (64 KiB): the receiver could never open its window by a segment, so every
// window update would wait for the sender's zero-window probe (seconds per test).
void reading_peer_buffer(tcp_pair& p) {
  int big = 256 * 1024;
  EXPECT_EQ(::setsockopt(p.peer, SOL_SOCKET, SO_RCVBUF, &big, sizeof big), 0);
}

// Reads the peer descriptor in a thread once `go` is set, until EOF/error/timeout or `stop`.
struct peer_reader {
  int fd;
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> got{0};
  std::atomic<bool> finished{false};
  int last_errno = 0;
  std::string data;
  std::thread t;
  explicit peer_reader(int f) : fd(f) {
    t = std::thread([this] {
      while (!go.load() && !stop.load()) std::this_thread::sleep_for(1ms);
      char buf[65536];
      while (!stop.load()) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
          last_errno = n < 0 ? errno : 0;
          break;
        }
        data.append(buf, static_cast<std::size_t>(n));
        got.fetch_add(static_cast<std::size_t>(n));
      }
      finished = true;
    });
  }
  void join() {
    if (t.joinable()) t.join();
  }
  ~peer_reader() {
    stop = true;
    go = true;
    ::shutdown(fd, SHUT_RDWR);  // unblocks a recv in progress
    join();
  }
};

// Fixed-size numbered messages: "m0000042 xxxx...\n" (size bytes).
std::string msg(std::size_t i, std::size_t size = 512) {
  char head[32];
  std::snprintf(head, sizeof head, "m%07zu ", i);
  std::string s(head);
  s.resize(size - 1, 'x');
  s.push_back('\n');
  return s;
}

// Where `got` first differs from `want`: "" when equal.
std::string mismatch(const std::string& got, const std::string& want) {
  if (got == want) return {};
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const std::size_t line_start = want.rfind('\n', i == 0 ? 0 : i - 1);
  const std::size_t from = line_start == std::string::npos ? 0 : line_start + 1;
  return "peer got " + std::to_string(got.size()) + " of " + std::to_string(want.size()) +
         " bytes; first difference at byte " + std::to_string(i) + " (message starting \"" + want.substr(from, 9) +
         "\", " + std::to_string(i - from) + " bytes into it); there the peer has \"" + got.substr(i, 12) +
         "\", expected \"" + want.substr(i, 12) + "\"";
}

std::vector<std::string> lines_of(const std::string& data) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    const auto nl = data.find('\n', pos);
    if (nl == std::string::npos) {
      out.push_back(data.substr(pos));  // partial last line
      break;
    }
    out.push_back(data.substr(pos, nl - pos + 1));
    pos = nl + 1;
  }
  return out;
}

// Sleeps on the loop until `pred` holds or `limit` passes.
template <class Pred>
task<bool> wait_until(Pred pred, std::chrono::milliseconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) co_return false;
    (void)co_await sleep_for(1ms);
  }
  co_return true;
}

// Fills `w` with `size`-byte messages (try_write, yielding so run() starts its send)
// until run() is stuck in a send: the queue holds messages that run() has not taken
// after 30 ms. Returns how many were accepted; numbering starts at `first`.
template <class W>
task<std::size_t> stall(W& w, std::size_t first, std::size_t size = 512) {
  std::size_t i = first;
  for (int round = 0; round < 2000; ++round) {
    for (int k = 0; k < 8; ++k) {
      auto r = w.try_write(msg(i, size));
      if (!r) co_return i - first;
      ++i;
    }
    (void)co_await yield();
    if (round % 8 == 7) {
      (void)co_await sleep_for(30ms);
      if (w.queued() > 0) {
        const auto q = w.queued();
        const auto sends = w.sends();
        (void)co_await sleep_for(150ms);
        if (w.queued() == q && w.sends() == sends) co_return i - first;
      }
    }
  }
  ADD_FAILURE() << "the peer never stalled";
  co_return i - first;
}

class BatchingWriterPromises : public ::testing::TestWithParam<backend_kind> {
 protected:
  void SetUp() override {
    try {
      ctx_.emplace(io_context_options{.backend = GetParam(), .quiet = true});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << e.what();
    }
  }
  io_context& ctx() { return *ctx_; }
  std::optional<io_context> ctx_;
};

using writer = batching_writer<std::string>;

task<void> run_into(writer& w, std::optional<result<void>>& out) { out = co_await w.run(); }
task<void> run_into_heap(writer* w, std::optional<result<void>>& out) { out = co_await w->run(); }

// ---------------------------------------------------------------------------------------
// 1. wait: no loss, no duplicate, each producer's order kept, through a stall.
//    "Messages are never split or interleaved: the peer gets each whole message, in the
//    order they were queued"; wait: "gets everything, at its own pace".

task<void> producer(writer& w, int id, int n, int& failures) {
  for (int i = 0; i < n; ++i) {
    char b[32];
    std::snprintf(b, sizeof b, "p%d:%06d\n", id, i);
    auto r = co_await w.write(std::string(b));
    if (!r) ++failures;
  }
}

TEST_P(BatchingWriterPromises, WaitPolicyDeliversEverythingInOrderThroughAStall) {
  auto p = make_pair(ctx());
  peer_reader rd(p->peer);
  writer w(p->w, {.max_messages = 8, .max_bytes = 64, .when_full = overflow_policy::wait});
  std::optional<result<void>> ran;
  int failures = 0;
  constexpr int producers = 4, per = 3000;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran, peer_reader& rd, int& failures) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    for (int id = 0; id < producers; ++id) s.spawn(producer(w, id, per, failures));
    (void)co_await sleep_for(100ms);  // stalled peer: producers are held back
    EXPECT_LE(w.queued(), 8u);
    rd.go = true;
    while (w.queued() > 0 || s.size() > 1) (void)co_await sleep_for(1ms);
    w.close();
    co_await s.join();
  }(w, ran, rd, failures));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran) << ran->error().message();
  EXPECT_EQ(failures, 0);
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  std::map<int, int> next;
  std::size_t count = 0;
  for (const auto& l : lines_of(rd.data)) {
    int id = -1, seq = -1;
    ASSERT_EQ(std::sscanf(l.c_str(), "p%d:%d\n", &id, &seq), 2) << l;
    ASSERT_EQ(seq, next[id]) << "producer " << id << " out of order / duplicate / lost";
    next[id] = seq + 1;
    ++count;
  }
  EXPECT_EQ(count, std::size_t{producers} * per);
  EXPECT_EQ(w.dropped(), 0u);
}

// ---------------------------------------------------------------------------------------
// 2. drop_oldest: gap notices stand exactly where messages were dropped, carry the exact
//    count, and sum to dropped(). "a writer given a gap notice sends one where they were";
//    "it goes out before the messages that follow the gap".

TEST_P(BatchingWriterPromises, DropOldestGapNoticesExactAndCounted) {
  auto p = make_pair(ctx());
  peer_reader rd(p->peer);
  std::uint64_t notices = 0;
  writer w(p->w, {.max_messages = 16, .when_full = overflow_policy::drop_oldest}, [&notices](std::uint64_t n) {
    ++notices;
    return "*gap " + std::to_string(n) + "\n";
  });
  std::optional<result<void>> ran;
  std::size_t total = 0;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran, peer_reader& rd, std::size_t& total) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    std::size_t i = 0;
    for (int phase = 0; phase < 6; ++phase) {
      // Stalled phases (even) and draining phases (odd).
      if (phase == 1) rd.go = true;
      for (int k = 0; k < 3000; ++k) {
        EXPECT_TRUE(w.try_write(msg(i++, 200)));
        if (k % 32 == 31) (void)co_await yield();
      }
      (void)co_await sleep_for(10ms);
    }
    total = i;
    w.close();
    co_await s.join();
  }(w, ran, rd, total));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran) << ran->error().message();
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  EXPECT_GT(w.dropped(), 0u) << "the test never made the writer drop";
  std::size_t expect = 0;
  std::uint64_t pending_gap = 0, gap_sum = 0, seen_notices = 0;
  for (const auto& l : lines_of(rd.data)) {
    if (l.rfind("*gap ", 0) == 0) {
      ASSERT_EQ(pending_gap, 0u) << "two notices in a row";
      pending_gap = std::stoull(l.substr(5));
      ASSERT_GT(pending_gap, 0u);
      gap_sum += pending_gap;
      ++seen_notices;
      continue;
    }
    ASSERT_EQ(l.size(), 200u) << "split message: " << l;
    const std::size_t seq = std::stoull(l.substr(1, 7));
    ASSERT_EQ(seq, expect + pending_gap) << "notice count does not match the gap (expected seq " << expect << " + gap "
                                         << pending_gap << ")";
    expect = seq + 1;
    pending_gap = 0;
  }
  EXPECT_EQ(pending_gap, 0u) << "trailing notice";
  EXPECT_EQ(expect, total) << "last message lost after close()";
  EXPECT_EQ(gap_sum, w.dropped());
  EXPECT_EQ(seen_notices, notices);
}

// 2b. The same gap-notice promise with the guide's fan-out message type (shared_ptr, not
//     affected by the partial-send defect) and tiny messages, so that full 64-message
//     batches cut inside their first message are common (the notice then waits a pass).
TEST_P(BatchingWriterPromises, DropOldestGapNoticesExactWithSharedPtrTinyMessages) {
  using line = std::shared_ptr<const std::string>;
  auto p = make_pair(ctx());
  peer_reader rd(p->peer);
  batching_writer<line> w(p->w, {.max_messages = 100, .when_full = overflow_policy::drop_oldest}, [](std::uint64_t n) {
    return std::make_shared<const std::string>("*gap " + std::to_string(n) + "\n");
  });
  std::optional<result<void>> ran;
  std::size_t total = 0;
  sync_wait(ctx(),
            [](batching_writer<line>& w, std::optional<result<void>>& ran, peer_reader& rd,
               std::size_t& total) -> task<void> {
              scope s;
              s.spawn([](batching_writer<line>& w, std::optional<result<void>>& ran) -> task<void> {
                ran = co_await w.run();
              }(w, ran));
              std::size_t i = 0;
              for (int phase = 0; phase < 8; ++phase) {
                if (phase == 1) rd.go = true;
                for (int k = 0; k < 20000; ++k) {
                  EXPECT_TRUE(w.try_write(std::make_shared<const std::string>(msg(i++, 20))));
                  if (k % 150 == 149) (void)co_await yield();
                }
                (void)co_await sleep_for(5ms);
              }
              total = i;
              w.close();
              co_await s.join();
            }(w, ran, rd, total));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran) << ran->error().message();
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  EXPECT_GT(w.dropped(), 0u);
  std::size_t expect = 0;
  std::uint64_t pending_gap = 0, gap_sum = 0;
  for (const auto& l : lines_of(rd.data)) {
    if (l.rfind("*gap ", 0) == 0) {
      ASSERT_EQ(pending_gap, 0u) << "two notices in a row";
      pending_gap = std::stoull(l.substr(5));
      gap_sum += pending_gap;
      continue;
    }
    ASSERT_EQ(l.size(), 20u) << "split message: " << l;
    const std::size_t seq = std::stoull(l.substr(1, 7));
    ASSERT_EQ(seq, expect + pending_gap) << "gap without an exact notice before seq " << seq;
    expect = seq + 1;
    pending_gap = 0;
  }
  EXPECT_EQ(expect, total);
  EXPECT_EQ(gap_sum, w.dropped());
}

// ---------------------------------------------------------------------------------------
// 3. A stop of run()'s task while the send is in flight (stalled peer): run() returns
//    operation_canceled, the queue is discarded, writes fail with operation_canceled.

TEST_P(BatchingWriterPromises, StopRunWhileSendInFlight) {
  auto p = make_pair(ctx());
  writer w(p->w, {.max_messages = 64, .when_full = overflow_policy::wait});
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    (void)co_await stall(w, 0);
    EXPECT_GT(w.queued(), 0u);
    s.request_stop();
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s)) << "run() did not end after its stop";
    co_await s.join();
  }(w, ran));
  ASSERT_TRUE(ran.has_value());
  ASSERT_FALSE(*ran);
  EXPECT_EQ(ran->error(), std::errc::operation_canceled) << ran->error().message();
  EXPECT_EQ(w.queued(), 0u);
  EXPECT_EQ(w.queued_bytes(), 0u);
  EXPECT_FALSE(w.is_open());
  auto r = w.try_write("late");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::operation_canceled);
  auto r2 = sync_wait(ctx(), w.write("late2"));
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error(), std::errc::operation_canceled);
  // "a run() after the end returns how it ended"
  auto again = sync_wait(ctx(), w.run());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(), std::errc::operation_canceled);
}

// 3b. Same with with_timeout(run()): the deadline stops the stalled send.
TEST_P(BatchingWriterPromises, WithTimeoutCutsAStalledPeerOff) {
  auto p = make_pair(ctx());
  writer w(p->w, {.max_messages = 64});
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran) -> task<void> {
    scope s;
    s.spawn([](writer& w, std::optional<result<void>>& ran) -> task<void> {
      ran = co_await with_timeout(w.run(), 200ms);
    }(w, ran));
    (void)co_await stall(w, 0);
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s));
    co_await s.join();
  }(w, ran));
  ASSERT_TRUE(ran.has_value());
  ASSERT_FALSE(*ran);
  EXPECT_EQ(ran->error(), std::errc::timed_out) << ran->error().message();
  EXPECT_FALSE(w.is_open());
}

// ---------------------------------------------------------------------------------------
// 4. A stop of write() while it waits for room: operation_canceled, nothing queued; the
//    messages around it are delivered in order, the cancelled one never.

TEST_P(BatchingWriterPromises, StopWriteWhileWaitingForRoomQueuesNothing) {
  auto p = make_pair(ctx());
  peer_reader rd(p->peer);
  writer w(p->w, {.max_messages = 4, .when_full = overflow_policy::wait});
  std::optional<result<void>> ran;
  std::size_t accepted = 0;
  sync_wait(ctx(),
            [](writer& w, std::optional<result<void>>& ran, peer_reader& rd, std::size_t& accepted) -> task<void> {
              scope s;
              s.spawn(run_into(w, ran));
              // Fill to the bound with a stalled peer (write() would wait from now on).
              std::size_t i = 0;
              for (int guard = 0; guard < 200000; ++guard) {
                auto r = w.try_write(msg(i, 512));
                if (!r) {
                  EXPECT_EQ(r.error(), std::errc::resource_unavailable_try_again);
                  if (w.queued() == 4) {
                    const auto sends = w.sends();
                    (void)co_await sleep_for(200ms);
                    if (w.queued() == 4 && w.sends() == sends) break;
                  }
                  (void)co_await sleep_for(1ms);
                  continue;
                }
                ++i;
                (void)co_await yield();
              }
              const std::size_t before = w.queued();
              std::optional<result<void>> wr;
              scope ws;
              ws.spawn([](writer& w, std::optional<result<void>>& wr) -> task<void> {
                wr = co_await w.write("CANCELLED-MESSAGE\n");
              }(w, wr));
              (void)co_await sleep_for(20ms);
              EXPECT_FALSE(wr.has_value()) << "write() did not wait";
              ws.request_stop();
              co_await ws.join();
              EXPECT_TRUE(wr.has_value());
              if (wr) {
                EXPECT_FALSE(*wr);
                if (!*wr) {
                  EXPECT_EQ(wr->error(), std::errc::operation_canceled);
                }
              }
              EXPECT_EQ(w.queued(), before) << "a stopped write() queued something";
              rd.go = true;
              for (int k = 0; k < 50; ++k) {
                auto r = co_await w.write(msg(i, 512));
                EXPECT_TRUE(r);
                ++i;
              }
              accepted = i;
              w.close();
              co_await s.join();
            }(w, ran, rd, accepted));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran);
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  EXPECT_EQ(rd.data.find("CANCELLED"), std::string::npos) << "the stopped write() reached the peer";
  std::size_t expect = 0;
  for (const auto& l : lines_of(rd.data)) {
    ASSERT_EQ(l, msg(expect, 512));
    ++expect;
  }
  EXPECT_EQ(expect, accepted);
}

// ---------------------------------------------------------------------------------------
// 5. fail: a stalled peer ends the writer with no_buffer_space once the bound is full;
//    run() returns it "once the cancelled send has completed"; writes then fail with it.

TEST_P(BatchingWriterPromises, FailPolicyEndsWriterOnStall) {
  auto p = make_pair(ctx());
  writer w(p->w, {.max_messages = 4, .when_full = overflow_policy::fail});
  std::optional<result<void>> ran;
  std::error_code refused;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran, std::error_code& refused) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    for (std::size_t i = 0; i < 100000; ++i) {
      auto r = w.try_write(msg(i, 512));
      if (!r) {
        refused = r.error();
        break;
      }
      (void)co_await yield();  // one message per turn: fails only when the send stalls
    }
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s)) << "run() did not end";
    co_await s.join();
  }(w, ran, refused));
  EXPECT_EQ(refused, std::errc::no_buffer_space) << refused.message();
  ASSERT_TRUE(ran.has_value());
  ASSERT_FALSE(*ran);
  EXPECT_EQ(ran->error(), std::errc::no_buffer_space) << ran->error().message();
  EXPECT_EQ(w.queued(), 0u);
  auto r = w.try_write("x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::no_buffer_space);
}

// ---------------------------------------------------------------------------------------
// 6. A peer that resets (SO_LINGER 0 close) while the send is stalled: run() returns the
//    error; queue discarded; writes fail with that same error.

TEST_P(BatchingWriterPromises, PeerResetWhileStalled) {
  auto p = make_pair(ctx());
  writer w(p->w, {.max_messages = 64, .when_full = overflow_policy::wait});
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran, tcp_pair& p) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    (void)co_await stall(w, 0);
    linger lg{1, 0};
    EXPECT_EQ(::setsockopt(p.peer, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    ::close(p.peer);
    p.peer = -1;
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s)) << "run() did not see the reset";
    co_await s.join();
  }(w, ran, *p));
  ASSERT_TRUE(ran.has_value());
  ASSERT_FALSE(*ran);
  const auto e = ran->error();
  EXPECT_TRUE(e == std::errc::connection_reset || e == std::errc::broken_pipe) << e.message();
  EXPECT_EQ(w.queued(), 0u);
  auto r = w.try_write("x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), e) << r.error().message();
}

// ---------------------------------------------------------------------------------------
// 7. Socket cancel() while the send is stalled: the send fails (operation_canceled), run()
//    returns that error and the writer has ended.

TEST_P(BatchingWriterPromises, SocketCancelWhileStalled) {
  auto p = make_pair(ctx());
  writer w(p->w, {.max_messages = 64});
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran, tcp_pair& p) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    (void)co_await stall(w, 0);
    p.w.cancel();
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s)) << "run() did not end after cancel()";
    co_await s.join();
  }(w, ran, *p));
  ASSERT_TRUE(ran.has_value());
  ASSERT_FALSE(*ran);
  EXPECT_EQ(ran->error(), std::errc::operation_canceled) << ran->error().message();
  EXPECT_FALSE(w.is_open());
  EXPECT_EQ(w.queued(), 0u);
}

// ---------------------------------------------------------------------------------------
// 8. Destruction while run() is in flight: "The destructor cancels the send in flight;
//    run() then returns operation_canceled without touching the writer". ASan watches.

TEST_P(BatchingWriterPromises, DestroyWhileSendInFlight) {
  auto p = make_pair(ctx());
  peer_reader rd(p->peer);
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](tcp_pair& p, std::optional<result<void>>& ran) -> task<void> {
    auto w = std::make_unique<writer>(p.w, batching_writer_options{.max_messages = 64});
    scope s;
    s.spawn(run_into_heap(w.get(), ran));
    (void)co_await stall(*w, 0, 4096);
    w.reset();  // run() is suspended in a stalled gathered send
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s)) << "run() did not end";
    co_await s.join();
  }(*p, ran));
  ASSERT_TRUE(ran.has_value());
  ASSERT_FALSE(*ran);
  EXPECT_EQ(ran->error(), std::errc::operation_canceled) << ran->error().message();
  // What the peer got is a prefix of the message stream (the last one possibly cut).
  rd.go = true;
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  auto ls = lines_of(rd.data);
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const auto m = msg(i, 4096);
    if (i + 1 == ls.size()) EXPECT_EQ(ls[i], m.substr(0, ls[i].size()));
    else ASSERT_EQ(ls[i], m);
  }
}

TEST_P(BatchingWriterPromises, DestroyWhileRunWaitsForWork) {
  auto p = make_pair(ctx());
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](tcp_pair& p, std::optional<result<void>>& ran) -> task<void> {
    auto w = std::make_unique<writer>(p.w);
    scope s;
    s.spawn(run_into_heap(w.get(), ran));
    (void)co_await sleep_for(5ms);
    w.reset();
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s)) << "run() did not end";
    co_await s.join();
  }(*p, ran));
  ASSERT_TRUE(ran.has_value());
  ASSERT_FALSE(*ran);
  EXPECT_EQ(ran->error(), std::errc::operation_canceled);
}

// Destroyed right after a message was granted to run() (its wake-up is queued, not run).
TEST_P(BatchingWriterPromises, DestroyRightAfterTryWriteWokeRun) {
  auto p = make_pair(ctx());
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](tcp_pair& p, std::optional<result<void>>& ran) -> task<void> {
    auto w = std::make_unique<writer>(p.w);
    scope s;
    s.spawn(run_into_heap(w.get(), ran));
    (void)co_await sleep_for(5ms);
    EXPECT_TRUE(w->try_write("hello\n"));
    w.reset();
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s));
    co_await s.join();
  }(*p, ran));
  ASSERT_TRUE(ran.has_value());
  ASSERT_FALSE(*ran);
  EXPECT_EQ(ran->error(), std::errc::operation_canceled);
}

// Destroyed at the first moment the peer can observe the last byte: run()'s completion
// may not have been processed yet.
TEST_P(BatchingWriterPromises, DestroyWhenPeerHasObservedTheLastByte) {
  for (int round = 0; round < 5; ++round) {
    auto p = make_pair(ctx());
    reading_peer_buffer(*p);
    peer_reader rd(p->peer);
    rd.go = true;
    std::optional<result<void>> ran;
    sync_wait(ctx(), [](tcp_pair& p, std::optional<result<void>>& ran, peer_reader& rd) -> task<void> {
      auto w = std::make_unique<writer>(p.w);
      scope s;
      s.spawn(run_into_heap(w.get(), ran));
      std::size_t bytes = 0;
      for (std::size_t i = 0; i < 200; ++i) {
        EXPECT_TRUE(w->try_write(msg(i, 300)));
        bytes += 300;
      }
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (rd.got.load() < bytes && std::chrono::steady_clock::now() < until) (void)co_await yield();
      EXPECT_EQ(rd.got.load(), bytes);
      w.reset();
      co_await s.join();
    }(*p, ran, rd));
    ASSERT_TRUE(ran.has_value());
    if (!*ran) {
      EXPECT_EQ(ran->error(), std::errc::operation_canceled);
    }
  }
}

// ---------------------------------------------------------------------------------------
// 9. Destroyed from inside the gap notice (run() is in flight: it is filling its batch).
//    The header: destruction while run() is in flight -> "run() then returns
//    operation_canceled without touching the writer". Run in a child process: a
//    use-after-free aborts under ASan.

void destroy_from_notice(backend_kind kind) {
  io_context ctx(io_context_options{.backend = kind, .quiet = true});
  auto p = make_pair(ctx);
  std::optional<result<void>> ran;
  std::unique_ptr<writer> w;
  w = std::make_unique<writer>(p->w,
                               batching_writer_options{.max_messages = 4, .when_full = overflow_policy::drop_oldest},
                               [&w](std::uint64_t n) {
                                 w.reset();  // the owner tears the connection down here
                                 return "*gap " + std::to_string(n) + "\n";
                               });
  sync_wait(ctx, [](std::unique_ptr<writer>& w, std::optional<result<void>>& ran, tcp_pair& p) -> task<void> {
    scope s;
    s.spawn(run_into_heap(w.get(), ran));
    // Stall, then drop (drop_oldest), then let the peer read so run() builds a batch
    // with the notice.
    // (The writer may be gone after any yield: its notice destroys it.)
    for (std::size_t round = 0; round < 400 && w; ++round) {
      for (std::size_t k = 0; k < 8 && w; ++k) (void)w->try_write(msg(round * 8 + k, 4096));
      (void)co_await yield();
    }
    std::thread drain([fd = p.peer] {
      char buf[65536];
      for (int k = 0; k < 64; ++k)
        if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) std::this_thread::sleep_for(2ms);
    });
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s));
    drain.join();
    co_await s.join();
  }(w, ran, *p));
  if (!ran || *ran || ran->error() != std::errc::operation_canceled) {
    std::fprintf(stderr, "run() did not return operation_canceled\n");
    std::_Exit(3);
  }
  std::_Exit(0);
}

TEST_P(BatchingWriterPromises, DestroyFromInsideGapNoticeDoesNotTouchTheWriter) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(destroy_from_notice(GetParam()), ::testing::ExitedWithCode(0), "");
}

// ---------------------------------------------------------------------------------------
// 10. Zero-length messages: they are messages like any other ("A message is anything with
//     bytes"); run() must not hang or fail on them, close() still drains and succeeds.

TEST_P(BatchingWriterPromises, ZeroLengthMessages) {
  auto p = make_pair(ctx());
  peer_reader rd(p->peer);
  rd.go = true;
  writer w(p->w, {.max_messages = 2, .when_full = overflow_policy::wait});
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    for (int i = 0; i < 100; ++i) {
      EXPECT_TRUE(co_await w.write(std::string()));
      if (i % 10 == 0) {
        EXPECT_TRUE(co_await w.write("z" + std::to_string(i) + "\n"));
      }
    }
    w.close();
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s)) << "run() hangs on empty messages";
    co_await s.join();
  }(w, ran));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran) << ran->error().message();
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  std::string want;
  for (int i = 0; i < 100; i += 10) want += "z" + std::to_string(i) + "\n";
  EXPECT_EQ(rd.data, want);
}

TEST_P(BatchingWriterPromises, OnlyZeroLengthMessagesThenClose) {
  auto p = make_pair(ctx());
  writer w(p->w);
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    for (int i = 0; i < 200; ++i) EXPECT_TRUE(w.try_write(std::string()));
    w.close();
    EXPECT_TRUE(co_await wait_until([&] { return ran.has_value(); }, 5s));
    co_await s.join();
  }(w, ran));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran);
  EXPECT_EQ(w.queued(), 0u);
}

// ---------------------------------------------------------------------------------------
// 11. Messages larger than max_bytes: "A message always fits an empty queue, whatever its
//     size"; every policy delivers them whole, in order.

// A big message under wait queued behind small ones waits for an empty queue, then goes.
TEST_P(BatchingWriterPromises, BigMessagesBehindSmallOnesUnderWaitArriveWhole) {
  auto p = make_pair(ctx());
  reading_peer_buffer(*p);  // 900 KB in all: the stall still holds the writer back
  peer_reader rd(p->peer);
  writer w(p->w, {.max_messages = 16, .max_bytes = 2048, .when_full = overflow_policy::wait});
  std::optional<result<void>> ran;
  std::size_t n = 0;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran, peer_reader& rd, std::size_t& n) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    s.spawn([](peer_reader& rd) -> task<void> {  // the peer stalls 100 ms, then reads
      (void)co_await sleep_for(100ms);
      rd.go = true;
    }(rd));
    std::size_t i = 0;
    for (; i < 60; ++i) EXPECT_TRUE(co_await w.write(msg(i, i % 7 == 3 ? 100000 : 100)));
    n = i;
    w.close();
    co_await s.join();
  }(w, ran, rd, n));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran);
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  std::string want;
  for (std::size_t i = 0; i < n; ++i) want += msg(i, i % 7 == 3 ? 100000 : 100);
  EXPECT_EQ(mismatch(rd.data, want), "");
}

// drop_oldest with a stalled peer and a message larger than max_bytes: the queue is
// emptied for it, the notice says how many went, the big one arrives whole.
TEST_P(BatchingWriterPromises, BigMessageUnderDropOldestFlushesQueueNoticesAndArrivesWhole) {
  auto p = make_pair(ctx());
  peer_reader rd(p->peer);
  writer w(p->w, {.max_messages = 16, .max_bytes = 4096, .when_full = overflow_policy::drop_oldest},
           [](std::uint64_t n) { return "*gap " + std::to_string(n) + "\n"; });
  std::optional<result<void>> ran;
  std::size_t first_big = 0;
  std::size_t queued_before = 0;
  sync_wait(ctx(),
            [](writer& w, std::optional<result<void>>& ran, peer_reader& rd, std::size_t& first_big,
               std::size_t& queued_before) -> task<void> {
              scope s;
              s.spawn(run_into(w, ran));
              first_big = co_await stall(w, 0, 256);
              queued_before = w.queued();
              EXPECT_GT(queued_before, 0u);
              EXPECT_TRUE(w.try_write(msg(first_big, 50000)));
              EXPECT_EQ(w.queued(), 1u);
              rd.go = true;
              w.close();
              co_await s.join();
            }(w, ran, rd, first_big, queued_before));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran);
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  EXPECT_EQ(w.dropped(), queued_before);
  auto ls = lines_of(rd.data);
  ASSERT_GE(ls.size(), 2u);
  EXPECT_EQ(ls.back(), msg(first_big, 50000));
  EXPECT_EQ(ls[ls.size() - 2], "*gap " + std::to_string(queued_before) + "\n");
  for (std::size_t i = 0; i + 2 < ls.size(); ++i) ASSERT_EQ(ls[i], msg(i, 256));
  EXPECT_EQ(ls.size() - 2 + queued_before, first_big) << "messages lost besides the dropped ones";
}

// ---------------------------------------------------------------------------------------
// 12. close() racing a pending write(): the write fails with errc::closed and never
//     reaches the peer; run() sends what was queued and returns success.

TEST_P(BatchingWriterPromises, CloseFailsWaitingWriteAndDeliversQueuedMessagesWhole) {
  auto p = make_pair(ctx());
  peer_reader rd(p->peer);
  writer w(p->w, {.max_messages = 2, .when_full = overflow_policy::wait});
  std::optional<result<void>> ran, wr;
  std::size_t accepted = 0;
  sync_wait(ctx(),
            [](writer& w, std::optional<result<void>>& ran, std::optional<result<void>>& wr, peer_reader& rd,
               std::size_t& accepted) -> task<void> {
              scope s;
              s.spawn(run_into(w, ran));
              std::size_t i = 0;
              for (int guard = 0; guard < 200000; ++guard) {
                auto r = w.try_write(msg(i, 1024));
                if (r) {
                  ++i;
                  (void)co_await yield();
                  continue;
                }
                const auto sends = w.sends();
                (void)co_await sleep_for(200ms);
                if (w.sends() != sends) continue;
                if (!w.try_write(msg(i, 1024))) break;  // still full after 200 ms: stalled
                ++i;
              }
              accepted = i;
              s.spawn([](writer& w, std::optional<result<void>>& wr) -> task<void> {
                wr = co_await w.write("AFTER-CLOSE\n");
              }(w, wr));
              (void)co_await yield();
              EXPECT_FALSE(wr.has_value());
              w.close();
              EXPECT_TRUE(co_await wait_until([&] { return wr.has_value(); }, 2s))
                  << "write() still waits after close()";
              rd.go = true;
              co_await s.join();
            }(w, ran, wr, rd, accepted));
  ASSERT_TRUE(wr.has_value());
  ASSERT_FALSE(*wr);
  EXPECT_EQ(wr->error(), make_error_code(errc::closed)) << wr->error().message();
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran) << ran->error().message();
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  std::string want;
  for (std::size_t i = 0; i < accepted; ++i) want += msg(i, 1024);
  EXPECT_EQ(mismatch(rd.data, want), "");
}

// ---------------------------------------------------------------------------------------
// 13. Counts: "run() ... takes everything queued so far, up to 64 messages and max_bytes,
//     and sends it with one gathered send"; sends(): "one per pass".

TEST_P(BatchingWriterPromises, SendsCountsOneGatheredSendPer64Messages) {
  auto p = make_pair(ctx());
  int big = 256 * 1024;
  ::setsockopt(p->w.native_handle(), SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  peer_reader rd(p->peer);
  rd.go = true;
  writer w(p->w);
  for (std::size_t i = 0; i < 100; ++i) ASSERT_TRUE(w.try_write(msg(i, 20)));
  EXPECT_EQ(w.queued(), 100u);
  EXPECT_EQ(w.queued_bytes(), 2000u);
  w.close();
  auto ran = sync_wait(ctx(), w.run());
  EXPECT_TRUE(ran);
  EXPECT_EQ(w.sends(), 2u);
  EXPECT_EQ(w.dropped(), 0u);
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  EXPECT_EQ(rd.data.size(), 2000u);
}

TEST_P(BatchingWriterPromises, SecondRunIsBusyAndRunAfterCloseSucceeds) {
  auto p = make_pair(ctx());
  writer w(p->w);
  std::optional<result<void>> ran;
  sync_wait(ctx(), [](writer& w, std::optional<result<void>>& ran) -> task<void> {
    scope s;
    s.spawn(run_into(w, ran));
    auto second = co_await w.run();
    EXPECT_FALSE(second);
    if (!second) {
      EXPECT_EQ(second.error(), std::errc::device_or_resource_busy);
    }
    EXPECT_TRUE(w.is_open()) << "the refused second run() changed the writer";
    w.close();
    co_await s.join();
  }(w, ran));
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(*ran);
  auto again = sync_wait(ctx(), w.run());
  EXPECT_TRUE(again);
  auto r = w.try_write("x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), make_error_code(errc::closed));
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchingWriterPromises,
                         ::testing::Values(backend_kind::uring, backend_kind::epoll, backend_kind::uring_poll),
                         [](const auto& info) {
                           return info.param == backend_kind::uring   ? std::string("uring")
                                  : info.param == backend_kind::epoll ? std::string("epoll")
                                                                      : std::string("uring_poll");
                         });

}  // namespace

namespace {
// Harness check (not a writer test): the same pair and reader with a plain send_all.
TEST(BatchingWriterPromisesHarness, PlainSendAllThroughSmallBuffersArrivesWhole) {
  io_context ctx(io_context_options{.backend = backend_kind::epoll, .quiet = true});
  auto p = make_pair(ctx);
  peer_reader rd(p->peer);
  rd.go = true;
  std::string big(200000, 'q');
  auto r = sync_wait(ctx, [](stream_socket& s, const std::string& big) -> task<result<std::size_t>> {
    co_return co_await s.send_all(const_buffer(big.data(), big.size()));
  }(p->w, big));
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, big.size());
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  EXPECT_EQ(rd.data.size(), big.size()) << "errno " << rd.last_errno;
}
}  // namespace

namespace {
// Minimal: messages queued before run(), one of them needs several sendmsg calls
// (small send buffer). Every byte must reach the peer, once, in order.
template <class M>
M as_message(const std::string& s) {
  if constexpr (std::is_same_v<M, std::string>) return s;
  else if constexpr (std::is_same_v<M, std::vector<std::byte>>)
    return M(reinterpret_cast<const std::byte*>(s.data()), reinterpret_cast<const std::byte*>(s.data()) + s.size());
  else return std::make_shared<const std::string>(s);
}

template <class M = std::string>
void partial_sends_case(backend_kind kind, std::vector<std::size_t> sizes, batching_writer_options opt) {
  io_context ctx(io_context_options{.backend = kind, .quiet = true});
  auto p = make_pair(ctx);
  reading_peer_buffer(*p);
  peer_reader rd(p->peer);
  rd.go = true;
  batching_writer<M> w(p->w, opt);
  std::string want;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(w.try_write(as_message<M>(msg(i, sizes[i]))));
    want += msg(i, sizes[i]);
  }
  w.close();
  auto ran = sync_wait(ctx, w.run());
  EXPECT_TRUE(ran);
  ::shutdown(p->w.native_handle(), SHUT_WR);
  rd.join();
  EXPECT_EQ(mismatch(rd.data, want), "") << "sends() " << w.sends();
  // A send bundle (io_context_options::send_bundles) is one request the kernel keeps
  // sending until every byte is out: the split happens inside the kernel.
  if (ctx.describe().find("send bundles yes") == std::string::npos) {
    EXPECT_GT(w.sends(), 1u) << "the case needs the writer's send buffer to split the sends";
  }
}

class BatchingWriterPartialSend : public ::testing::TestWithParam<backend_kind> {};

TEST_P(BatchingWriterPartialSend, StringNeedingSeveralSendmsgArrivesWhole) {
  partial_sends_case(GetParam(), {300000}, {});
}
TEST_P(BatchingWriterPartialSend, SmallThenBigStringArriveWhole) { partial_sends_case(GetParam(), {100, 300000}, {}); }
TEST_P(BatchingWriterPartialSend, BigThenSmallStringArriveWhole) { partial_sends_case(GetParam(), {300000, 100}, {}); }
// The same with the other owning message type the header names, and with the shared
// pointer of the guide's fan-out idiom (control).
TEST_P(BatchingWriterPartialSend, VectorOfBytesNeedingSeveralSendmsgArrivesWhole) {
  partial_sends_case<std::vector<std::byte>>(GetParam(), {300000}, {});
}
TEST_P(BatchingWriterPartialSend, SharedPtrNeedingSeveralSendmsgArrivesWholeControl) {
  partial_sends_case<std::shared_ptr<const std::string>>(GetParam(), {300000}, {});
}
TEST_P(BatchingWriterPartialSend, ManySmallStringsCutBetweenMessagesArriveWhole) {
  std::vector<std::size_t> sizes(64, 1500);
  partial_sends_case(GetParam(), sizes, {});
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchingWriterPartialSend,
                         ::testing::Values(backend_kind::uring, backend_kind::epoll, backend_kind::uring_poll),
                         [](const auto& info) {
                           return info.param == backend_kind::uring   ? std::string("uring")
                                  : info.param == backend_kind::epoll ? std::string("epoll")
                                                                      : std::string("uring_poll");
                         });
}  // namespace
