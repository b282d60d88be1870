// SPDX-License-Identifier: Apache-2.0
// The output a tls::stream holds between operations (the rest of a record whose send was
// cut by its deadline or a stop) against a real OpenSSL peer (openssl_peer.hpp):
// - it goes out before anything else, also when the next operation is a recv, whose
//   peer answers only once the whole request arrived;
// - the read side does not depend on it: a peer that closed (half-closed, or reset while
//   our bytes were unread) still has its last message delivered, also when decrypting
//   that message produced output of our own (the refusal of a renegotiation), and the write
//   error is reported by the next send;
// - a send that has to wait behind a recv pushing that output sleeps (the loop does not
//   spin) and obeys its deadline and its stop.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "openssl_peer.hpp"
#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class TlsPendingOutput : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(test_certs::get().ok);
  }
};

using clock_type = std::chrono::steady_clock;

std::string text_of(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// A client stream to the peer, handshaken.
task<result<tls::stream>> connect_to(openssl_peer& peer, const tls::context& cctx) {
  auto sock = co_await stream_socket::connect(peer.address());
  if (!sock) co_return unexpected(sock.error());
  // A send buffer of a fixed size: the kernel would otherwise grow it as the window
  // grows, and a send found stuck could go on a moment later on a loaded machine.
  const int sndbuf = 256 * 1024;
  EXPECT_EQ(::setsockopt(sock->native_handle(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
  auto s = tls::stream::client(cctx, std::move(*sock), "localhost");
  if (!s) co_return unexpected(s.error());
  auto hs = co_await s->handshake(5s);
  if (!hs) co_return unexpected(hs.error());
  co_return std::move(*s);
}

// Sends far more than the socket buffers hold under a short deadline, so that the send
// stops inside a record: returns the bytes the stream took (their record is committed).
task<std::size_t> cut_send(tls::stream& s, const std::vector<std::byte>& big) {
  // Rounds until one takes nothing more: on a loaded machine one round may end before
  // the socket buffers are full, and the rest would flush later behind the test's back.
  std::size_t taken = 0;
  for (int round = 0; round < 100 && taken < big.size(); ++round) {
    auto sent = co_await s.send_all(std::span(big).subspan(taken), clock_type::now() + 200ms);
    if (!sent) {  // a round that took nothing before its deadline
      EXPECT_TRUE(taken > 0 && sent.error() == std::errc::timed_out) << sent.error().message();
      break;
    }
    if (*sent == 0) break;
    taken += *sent;
  }
  EXPECT_LT(taken, big.size()) << "the deadline should have cut the send";
  co_return taken;
}

// Waits (on the loop) until the peer's script reached `mark`.
task<bool> until_reached(openssl_peer& peer, int mark, std::chrono::milliseconds limit = 5s) {
  auto end = clock_type::now() + limit;
  while (!peer.has_reached(mark)) {
    if (clock_type::now() > end) co_return false;
    (void)co_await sleep_for(2ms);
  }
  co_return true;
}

// Awaits `t` under `token` (not the awaiting task's).
template <class T>
task<T> under(std::stop_token token, task<T> t) {
  std::optional<T> out;
  scope sc(token);
  sc.spawn(
      [](task<T> t, std::optional<T>& out) -> task<void> { out.emplace(co_await std::move(t)); }(std::move(t), out));
  co_await sc.join();
  co_return std::move(*out);
}

TEST_P(TlsPendingOutput, ARecvPushesOutTheRestOfACutSend) {
  const auto big = random_bytes(32 << 20, 5);
  std::atomic<std::size_t> request{0};
  std::vector<std::byte> got;
  // The peer answers once it has the whole request (and never before).
  openssl_peer peer([&](openssl_peer& p) {
    if (!p.wait(1)) return;
    if (p.read_exact(request, got) != request) return;
    (void)p.write("answer");
    (void)p.wait(2);
  });
  auto cctx = make_client_context();
  run([](openssl_peer& peer, tls::context& cctx, const std::vector<std::byte>& big,
         std::atomic<std::size_t>& request) -> task<void> {
    auto s = co_await connect_to(peer, cctx);
    EXPECT_TRUE(s) << s.error().message();
    if (!s) co_return;
    request = co_await cut_send(*s, big);
    peer.open(1);
    std::vector<std::byte> buf(64);
    auto answer = co_await s->recv(buf, clock_type::now() + 5s);
    EXPECT_TRUE(answer) << answer.error().message() << ": the rest of the request never went out";
    if (answer) {
      EXPECT_EQ(text_of(std::span(buf).first(*answer)), "answer");
    }
  }(peer, cctx, big, request));
  peer.open(2);
  peer.stop();
  ASSERT_EQ(got.size(), request.load());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), big.begin()));
}

TEST_P(TlsPendingOutput, AHalfClosedPeerThatStoppedReadingStillHasItsLastMessageDelivered) {
  const auto big = random_bytes(32 << 20, 6);
  openssl_peer peer([&](openssl_peer& p) {
    if (!p.wait(1)) return;
    (void)p.write("last words");
    p.close_notify();
    ::shutdown(p.fd(), SHUT_WR);
    (void)p.wait(2);  // reads nothing
  });
  auto cctx = make_client_context();
  run([](openssl_peer& peer, tls::context& cctx, const std::vector<std::byte>& big) -> task<void> {
    auto s = co_await connect_to(peer, cctx);
    EXPECT_TRUE(s) << s.error().message();
    if (!s) co_return;
    (void)co_await cut_send(*s, big);
    peer.open(1);
    std::vector<std::byte> buf(64);
    auto begun = clock_type::now();
    auto last = co_await s->recv(buf, begun + 5s);
    EXPECT_TRUE(last) << last.error().message();
    if (last) {
      EXPECT_EQ(text_of(std::span(buf).first(*last)), "last words");
    }
    EXPECT_LT(clock_type::now() - begun, 2s) << "the recv waited for the write side";
    auto end = co_await s->recv(buf, clock_type::now() + 5s);
    EXPECT_TRUE(end && *end == 0) << (end ? "data" : end.error().message());
  }(peer, cctx, big));
  peer.open(2);
}

TEST_P(TlsPendingOutput, APeerThatClosedOnUnreadBytesStillHasItsLastMessageDelivered) {
  const auto big = random_bytes(32 << 20, 7);
  openssl_peer peer([&](openssl_peer& p) {
    if (!p.wait(1)) return;
    (void)p.write("last words");
    p.close_notify();
    p.close_socket();  // our bytes are unread: the kernel resets the connection
    p.reached(1);
  });
  auto cctx = make_client_context();
  run([](openssl_peer& peer, tls::context& cctx, const std::vector<std::byte>& big) -> task<void> {
    auto s = co_await connect_to(peer, cctx);
    EXPECT_TRUE(s) << s.error().message();
    if (!s) co_return;
    (void)co_await cut_send(*s, big);
    peer.open(1);
    EXPECT_TRUE(co_await until_reached(peer, 1));
    (void)co_await sleep_for(50ms);  // the reset has arrived
    std::vector<std::byte> buf(64);
    auto last = co_await s->recv(buf, clock_type::now() + 5s);
    EXPECT_TRUE(last) << last.error().message() << ": the write error hid the peer's last message";
    if (last) {
      EXPECT_EQ(text_of(std::span(buf).first(*last)), "last words");
    }
    // Then the end: the close_notify, unless the reset overtook it.
    auto end = co_await s->recv(buf, clock_type::now() + 5s);
    EXPECT_TRUE(!end || *end == 0) << "data after the last message";
    // The send reports an error (the write side's, or the fatal one the recv saw), at once.
    auto begun = clock_type::now();
    auto after = co_await s->send(std::string_view("more"));
    EXPECT_FALSE(after);
    if (!after) {
      EXPECT_NE(after.error(), std::errc::timed_out);
    }
    EXPECT_LT(clock_type::now() - begun, 1s);
  }(peer, cctx, big));
}

TEST_P(TlsPendingOutput, PlaintextIsDeliveredWhenTheAnswerItProducedCannotBeSent) {
  // A TLS 1.2 server asks for a renegotiation, then sends data: decrypting it, the
  // client writes its refusal (a no_renegotiation alert) and then has the plaintext.
  openssl_peer peer({.max_version = TLS1_2_VERSION}, [&](openssl_peer& p) {
    if (!p.wait(1)) return;
    EXPECT_EQ(SSL_renegotiate(p.ssl()), 1);
    EXPECT_EQ(SSL_do_handshake(p.ssl()), 1);  // the HelloRequest
    (void)p.write("after the hello request");
    p.close_notify();
    p.close_socket();  // the client's "x" is unread: a reset
    p.reached(1);
  });
  auto cctx = make_client_context();
  run([](openssl_peer& peer, tls::context& cctx) -> task<void> {
    auto s = co_await connect_to(peer, cctx);
    EXPECT_TRUE(s) << s.error().message();
    if (!s) co_return;
    auto x = co_await s->send_all(std::string_view("x"));
    EXPECT_TRUE(x);
    peer.open(1);
    EXPECT_TRUE(co_await until_reached(peer, 1));
    (void)co_await sleep_for(50ms);  // the reset has arrived: the refusal cannot be sent
    std::vector<std::byte> buf(64);
    auto got = co_await s->recv(buf, clock_type::now() + 5s);
    EXPECT_TRUE(got) << got.error().message() << ": the plaintext was dropped for a write error";
    if (got) {
      EXPECT_EQ(text_of(std::span(buf).first(*got)), "after the hello request");
    }
    auto end = co_await s->recv(buf, clock_type::now() + 5s);
    EXPECT_TRUE(!end || *end == 0) << "data after the last message";
    auto after = co_await s->send(std::string_view("more"));
    EXPECT_FALSE(after) << "the connection was reset";
  }(peer, cctx));
}

TEST_P(TlsPendingOutput, ASendBehindARecvsFlushSleepsAndObeysItsDeadlineAndStop) {
  const auto big = random_bytes(32 << 20, 8);
  std::atomic<std::size_t> request{0};
  std::vector<std::byte> got;
  openssl_peer peer([&](openssl_peer& p) {
    if (!p.wait(1)) return;
    (void)p.write("one");  // the client's recv gets going, with our output pending
    if (!p.wait(2)) return;
    if (p.read_exact(request, got) != request) return;
    (void)p.write("done");
    (void)p.wait(3);
  });
  auto cctx = make_client_context();
  run([](openssl_peer& peer, tls::context& cctx, const std::vector<std::byte>& big,
         std::atomic<std::size_t>& request) -> task<void> {
    auto s = co_await connect_to(peer, cctx);
    EXPECT_TRUE(s) << s.error().message();
    if (!s) co_return;
    std::size_t taken = co_await cut_send(*s, big);
    std::string received;
    bool sending = true;
    scope sc;
    // The reader: recvs until "done" (each one pushes the pending output meanwhile).
    sc.spawn([](tls::stream& s, std::string& received) -> task<void> {
      std::vector<std::byte> buf(64);
      while (received.find("done") == std::string::npos) {
        auto n = co_await s.recv(buf, clock_type::now() + 10s);
        if (!n || *n == 0) co_return;
        received += text_of(std::span(buf).first(*n));
      }
    }(*s, received));
    // A guard: if the sends below do not come back, let the peer read so that they do.
    scope guard;
    guard.spawn(
        [](openssl_peer& peer, std::atomic<std::size_t>& request, std::size_t taken, bool& sending) -> task<void> {
          auto slept = co_await sleep_for(10s);  // far past both bounds below, also on a loaded machine
          if (!slept || !sending) co_return;
          ADD_FAILURE() << "the sends ignored their deadline and stop";
          request = taken;
          peer.open(2);
        }(peer, request, taken, sending));
    peer.open(1);
    // "one" arrives; the next recv waits, pushing our output.
    for (auto until = clock_type::now() + 10s; received.empty() && clock_type::now() < until;)
      (void)co_await sleep_for(5ms);
    (void)co_await sleep_for(20ms);
    EXPECT_EQ(received, "one");

    const auto& stats = io_context::current()->stats();
    const std::vector<std::byte> more = random_bytes(20000, 9);
    // Deadline.
    auto iterations = stats.iterations;
    auto begun = clock_type::now();
    auto late = co_await s->send_all(more, begun + 200ms);
    auto took = clock_type::now() - begun;
    EXPECT_FALSE(late) << "it cannot have sent: the peer reads nothing";
    if (!late) {
      EXPECT_EQ(late.error(), std::errc::timed_out);
    }
    EXPECT_GE(took, 190ms);
    EXPECT_LT(took, 4s) << "the deadline passed long before";
    EXPECT_LT(stats.iterations - iterations, 1000u) << "the loop spun while the send waited";
    // Stop.
    iterations = stats.iterations;
    begun = clock_type::now();
    std::stop_source stop;
    scope stopper;
    stopper.spawn([](std::stop_source& stop) -> task<void> {
      (void)co_await sleep_for(150ms);
      stop.request_stop();
    }(stop));
    auto stopped = co_await under(stop.get_token(), s->send(more));
    took = clock_type::now() - begun;
    co_await stopper.join();
    EXPECT_FALSE(stopped);
    if (!stopped) {
      EXPECT_EQ(stopped.error(), std::errc::operation_canceled);
    }
    EXPECT_LT(took, 4s) << "the stop came long before";
    EXPECT_LT(stats.iterations - iterations, 1000u) << "the loop spun while the send waited";
    sending = false;
    guard.request_stop();
    co_await guard.join();
    if (late) taken += *late;
    if (stopped) taken += *stopped;
    // Everything taken reaches the peer, which then answers.
    request = taken;
    peer.open(2);
    co_await sc.join();
    EXPECT_EQ(received, "onedone");
  }(peer, cctx, big, request));
  peer.open(3);
  peer.stop();
  ASSERT_EQ(got.size(), request.load());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), big.begin()));
}

}  // namespace

RINGIO_ALL_BACKENDS(TlsPendingOutput);
