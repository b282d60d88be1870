// SPDX-License-Identifier: Apache-2.0
// tls::stream between two ringio ends over TCP on 127.0.0.1, on every backend:
// handshake, echo, verification failures, SNI, ALPN, resumption, versions, close_notify
// against truncation, cancellation, timeouts and garbage.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class TlsStream : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(test_certs::get().ok) << "could not make the test certificates with openssl";
  }
};

std::string text_of(const std::vector<std::byte>& v, std::size_t n) {
  return std::string(reinterpret_cast<const char*>(v.data()), n);
}

// Echoes every byte until the peer's close_notify, then answers it.
task<void> tls_echo(tls::stream& s) {
  std::vector<std::byte> buf(16384);
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) break;
    auto w = co_await s.send_all(const_buffer(buf.data(), *n));
    if (!w) break;
  }
  (void)co_await s.shutdown(1s);
}

TEST_P(TlsStream, HandshakeAndEchoOfOneByteToOneMebibyte) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto hs = co_await handshake_both(p);
    EXPECT_TRUE(hs.first) << hs.first.error().message();
    EXPECT_TRUE(hs.second) << hs.second.error().message();
    if (!hs.first || !hs.second) co_return;
    EXPECT_TRUE(p.client.is_established());
    EXPECT_FALSE(p.client.is_kernel_tls());
    EXPECT_NE(p.client.describe().find("TLSv1.3"), std::string::npos) << p.client.describe();
    EXPECT_EQ(p.server.server_name(), "localhost");
    scope s;
    s.spawn(tls_echo(p.server));
    for (std::size_t size : {std::size_t{1}, std::size_t{100}, std::size_t{16384}, std::size_t{16385},
                             std::size_t{100000}, std::size_t{1} << 20}) {
      auto data = random_bytes(size, size);
      std::vector<std::byte> back(size);
      auto sender = [](tls::stream& c, const std::vector<std::byte>& d) -> task<result<std::size_t>> {
        co_return co_await c.send_all(d);
      };
      auto [sent, got] = co_await when_all(sender(p.client, data), p.client.recv_exact(back));
      EXPECT_TRUE(sent && *sent == size) << size;
      EXPECT_TRUE(got && *got == size) << size;
      EXPECT_TRUE(back == data) << size;
    }
    auto closed = co_await p.client.shutdown(1s);
    EXPECT_TRUE(closed) << closed.error().message();
    co_await s.join();
  }(listener, cctx, sctx));
}

TEST_P(TlsStream, HostnameMismatchFailsWithAClearMessage) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx, "wrong.example");
    auto hs = co_await handshake_both(p);
    EXPECT_FALSE(hs.first);
    EXPECT_TRUE(tls::is_verification_error(hs.first.error()));
    EXPECT_NE(hs.first.error().message().find("hostname mismatch"), std::string::npos) << hs.first.error().message();
    EXPECT_FALSE(hs.second);  // the server is told by an alert
    std::vector<std::byte> buf(10);
    auto r = co_await p.client.recv(buf);
    EXPECT_FALSE(r);
    EXPECT_FALSE(p.client.is_established());
  }(listener, cctx, sctx));
}

TEST_P(TlsStream, AnUnknownCaFails) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto opts = client_settings();
  opts.ca_file = test_certs::get().rogue_ca;
  auto cctx = make_client_context(opts);
  run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto hs = co_await handshake_both(p);
    EXPECT_FALSE(hs.first);
    EXPECT_EQ(tls::verification_result(hs.first.error()), 20) << hs.first.error().message();  // no local issuer
    EXPECT_NE(hs.first.error().message().find("certificate verify failed"), std::string::npos);
    EXPECT_FALSE(hs.second);
    if (!hs.second) {
      EXPECT_NE(hs.second.error().message().find("unknown ca"), std::string::npos) << hs.second.error().message();
    }
  }(listener, cctx, sctx));
}

TEST_P(TlsStream, SniPicksTheCertificate) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto other = server_settings();
  other.certificate_chain_file = test_certs::get().other_cert;
  other.private_key_file = test_certs::get().other_key;
  sctx.add_server_name("*.test", make_server_context(other));
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    for (const char* name : {"other.test", "localhost"}) {
      auto p = co_await make_tls_pair(l, cctx, sctx, name);
      auto hs = co_await handshake_both(p);
      EXPECT_TRUE(hs.first) << name << ": " << hs.first.error().message();
      EXPECT_TRUE(hs.second) << name << ": " << hs.second.error().message();
      EXPECT_EQ(p.server.server_name(), name);
    }
  }(listener, cctx, sctx));
}

TEST_P(TlsStream, AlpnChoosesTheServersPreferenceAmongTheClients) {
  auto listener = listen_loopback();
  auto so = server_settings();
  so.alpn = {"h2", "http/1.1"};
  auto sctx = make_server_context(so);
  auto co = client_settings();
  co.alpn = {"http/1.1", "spdy/3"};
  auto cctx = make_client_context(co);
  co.alpn = {};
  auto silent = make_client_context(co);
  run([](stream_listener& l, tls::context& cctx, tls::context& silent, tls::context& sctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto hs = co_await handshake_both(p);
    EXPECT_TRUE(hs.first && hs.second);
    EXPECT_EQ(p.client.alpn(), "http/1.1");
    EXPECT_EQ(p.server.alpn(), "http/1.1");
    auto q = co_await make_tls_pair(l, silent, sctx);
    auto hs2 = co_await handshake_both(q);
    EXPECT_TRUE(hs2.first && hs2.second) << "a client offering no ALPN is served without it";
    EXPECT_EQ(q.client.alpn(), "");
    EXPECT_EQ(q.server.alpn(), "");
  }(listener, cctx, silent, sctx));
}

// RFC 7301 3.2: offered protocols with none in common end the handshake with the fatal
// no_application_protocol alert, which the client reports.
TEST_P(TlsStream, AlpnWithNothingInCommonFailsWithNoApplicationProtocol) {
  auto listener = listen_loopback();
  auto so = server_settings();
  so.alpn = {"h2", "http/1.1"};
  auto sctx = make_server_context(so);
  auto co = client_settings();
  co.alpn = {"imap"};
  auto cctx = make_client_context(co);
  run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto hs = co_await handshake_both(p);
    EXPECT_FALSE(hs.second);
    EXPECT_FALSE(hs.first);
    if (!hs.first) {
      EXPECT_NE(hs.first.error().message().find("no application protocol"), std::string::npos)
          << hs.first.error().message();
    }
  }(listener, cctx, sctx));
}

task<void> resumption(stream_listener& l, tls::context& cctx, tls::context& sctx, const char* version) {
  for (int i = 0; i < 2; ++i) {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto hs = co_await handshake_both(p);
    EXPECT_TRUE(hs.first && hs.second);
    EXPECT_NE(p.client.describe().find(version), std::string::npos) << p.client.describe();
    EXPECT_EQ(p.client.is_resumed(), i == 1) << version << " connection " << i;
    EXPECT_EQ(p.server.is_resumed(), i == 1);
    // An exchange, so that the client reads the TLS 1.3 tickets, then a clean close.
    std::vector<std::byte> buf(16);
    scope s;
    s.spawn(tls_echo(p.server));
    auto sent = co_await p.client.send_all(std::string_view("ping"));
    EXPECT_TRUE(sent);
    auto got = co_await p.client.recv_exact(mutable_buffer(buf.data(), 4));
    EXPECT_TRUE(got && *got == 4);
    auto closed = co_await p.client.shutdown(1s);
    EXPECT_TRUE(closed) << closed.error().message();
    co_await s.join();
  }
}

TEST_P(TlsStream, SessionsAreResumedWithTickets) {
  auto listener = listen_loopback();
  for (auto v : {tls::protocol_version::tls1_2, tls::protocol_version::tls1_3}) {
    auto so = server_settings();
    so.min_version = so.max_version = v;
    auto sctx = make_server_context(so);
    auto cctx = make_client_context();
    run(resumption(listener, cctx, sctx, v == tls::protocol_version::tls1_2 ? "TLSv1.2" : "TLSv1.3"));
  }
}

TEST_P(TlsStream, VersionLimitsAreObeyed) {
  auto listener = listen_loopback();
  auto so = server_settings();
  so.max_version = tls::protocol_version::tls1_2;
  auto only12 = make_server_context(so);
  auto co = client_settings();
  co.min_version = tls::protocol_version::tls1_3;
  auto only13 = make_client_context(co);
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& cctx, tls::context& only13, tls::context& only12) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, only12);
    auto hs = co_await handshake_both(p);
    EXPECT_TRUE(hs.first && hs.second);
    EXPECT_EQ(p.client.describe().rfind("TLSv1.2 ECDHE-ECDSA-", 0), 0u) << p.client.describe();
    auto q = co_await make_tls_pair(l, only13, only12);
    auto hs2 = co_await handshake_both(q);
    EXPECT_FALSE(hs2.first);
    EXPECT_FALSE(hs2.second);
    if (!hs2.first) {
      EXPECT_NE(hs2.first.error().message().find("protocol version"), std::string::npos) << hs2.first.error().message();
    }
  }(listener, cctx, only13, only12));
}

TEST_P(TlsStream, CloseNotifyIsAnEndAndACloseWithoutItIsTruncation) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    std::vector<std::byte> buf(64);
    {
      auto p = co_await make_tls_pair(l, cctx, sctx);
      auto hs = co_await handshake_both(p);
      EXPECT_TRUE(hs.first && hs.second);
      auto sent = co_await p.server.send_all(std::string_view("last words"));
      EXPECT_TRUE(sent);
      result<void> closed = unexpected(std::errc::operation_in_progress);
      scope s;
      s.spawn([](tls::stream& server, result<void>& out) -> task<void> {
        out = co_await server.shutdown(1s);  // waits for the client's answer below
      }(p.server, closed));
      auto got = co_await p.client.recv_exact(buf);
      EXPECT_TRUE(got && *got == 10);  // short: the stream ended cleanly
      EXPECT_EQ(text_of(buf, 10), "last words");
      auto end = co_await p.client.recv(buf);
      EXPECT_TRUE(end && *end == 0);
      auto answered = co_await p.client.shutdown(1s);
      EXPECT_TRUE(answered) << answered.error().message();
      co_await s.join();
      EXPECT_TRUE(closed) << closed.error().message();
    }
    {
      auto p = co_await make_tls_pair(l, cctx, sctx);
      auto hs = co_await handshake_both(p);
      EXPECT_TRUE(hs.first && hs.second);
      auto sent = co_await p.server.send_all(std::string_view("cut"));
      EXPECT_TRUE(sent);
      auto closed = co_await p.server.close();
      EXPECT_TRUE(closed);
      auto got = co_await p.client.recv(buf);
      EXPECT_TRUE(got && *got == 3);
      auto end = co_await p.client.recv(buf);
      EXPECT_FALSE(end);
      EXPECT_EQ(end.error(), tls::tls_errc::truncated) << end.error().message();
    }
  }(listener, cctx, sctx));
}

TEST_P(TlsStream, AStoppedRecvLosesNoData) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto hs = co_await handshake_both(p);
    EXPECT_TRUE(hs.first && hs.second);
    std::vector<std::byte> buf(64);
    auto stopped = co_await with_timeout(p.client.recv(buf), 20ms);
    EXPECT_FALSE(stopped);
    EXPECT_EQ(stopped.error(), std::errc::timed_out);
    // A record split in two: the first half arrives, then the stop, then the rest.
    auto sent = co_await p.server.send_all(std::string_view("kept across the stop"));
    EXPECT_TRUE(sent);
    auto again = co_await with_timeout(p.client.recv(buf), 1s);
    EXPECT_TRUE(again) << again.error().message();
    if (again) {
      EXPECT_EQ(text_of(buf, *again), "kept across the stop");
    }
  }(listener, cctx, sctx));
}

TEST_P(TlsStream, AHandshakeWithASilentPeerTimesOut) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  run([](stream_listener& l, tls::context& sctx) -> task<void> {
    auto sockets = co_await tcp_pair(l);
    auto s = tls::stream::server(sctx, std::move(sockets.second));
    EXPECT_TRUE(s);
    if (!s) co_return;
    auto t0 = std::chrono::steady_clock::now();
    auto hs = co_await s->handshake(50ms);
    EXPECT_FALSE(hs);
    EXPECT_EQ(hs.error(), std::errc::timed_out);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    std::vector<std::byte> buf(8);
    auto r = co_await s->recv(buf);
    EXPECT_FALSE(r);
  }(listener, sctx));
}

TEST_P(TlsStream, GarbageInsteadOfAClientHelloFails) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  run([](stream_listener& l, tls::context& sctx) -> task<void> {
    auto sockets = co_await tcp_pair(l);
    auto s = tls::stream::server(sctx, std::move(sockets.second));
    EXPECT_TRUE(s);
    if (!s) co_return;
    auto sent = co_await sockets.first.send_all(std::string_view("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_TRUE(sent);
    auto hs = co_await s->handshake(1s);
    EXPECT_FALSE(hs);
    EXPECT_EQ(hs.error().category(), tls::tls_category());
    EXPECT_NE(hs.error().message().find("http request"), std::string::npos) << hs.error().message();
    // Random bytes too.
    auto more = co_await tcp_pair(l);
    auto s2 = tls::stream::server(sctx, std::move(more.second));
    auto junk = random_bytes(300, 5);
    auto sent2 = co_await more.first.send_all(junk);
    EXPECT_TRUE(sent2);
    auto hs2 = co_await s2->handshake(1s);
    EXPECT_FALSE(hs2);
  }(listener, sctx));
}

TEST_P(TlsStream, MisuseIsReported) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  EXPECT_EQ(tls::stream::client(sctx, stream_socket{}, "x").error(), std::errc::invalid_argument);
  run([](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    auto sockets = co_await tcp_pair(l);
    auto wrong = tls::stream::server(cctx, std::move(sockets.second));
    EXPECT_EQ(wrong.error(), std::errc::invalid_argument);
    auto p = co_await make_tls_pair(l, cctx, sctx);
    std::vector<std::byte> buf(8);
    auto early = co_await p.client.recv(buf);
    EXPECT_EQ(early.error(), tls::tls_errc::not_established);
    auto early_send = co_await p.client.send(std::string_view("x"));
    EXPECT_EQ(early_send.error(), tls::tls_errc::not_established);
  }(listener, cctx, sctx));
}

TEST(TlsContext, BadFilesAreReportedWithTheirReason) {
  auto o = server_settings();
  o.private_key_file = "/nonexistent/key.pem";
  auto c = tls::context::server(o);
  EXPECT_FALSE(c);
  if (!c) {
    EXPECT_EQ(c.error(), std::errc::no_such_file_or_directory) << c.error().message();
  }
  o = server_settings();
  o.private_key_file = test_certs::get().other_key;  // not the certificate's key
  auto mismatch = tls::context::server(o);
  EXPECT_FALSE(mismatch);
  if (!mismatch) {
    EXPECT_NE(mismatch.error().message().find("mismatch"), std::string::npos) << mismatch.error().message();
  }
  o = server_settings();
  o.cipher_list = "NOT-A-CIPHER";
  EXPECT_FALSE(tls::context::server(o));
}

// A CA file that cannot work fails the context, naming what is wrong with it.
TEST(TlsContext, BadCaFilesAreReportedWithTheirReason) {
  ASSERT_TRUE(test_certs::get().ok);
  const std::string dir = test_certs::get().dir;
  {
    std::ofstream(dir + "/not_pem.txt") << "this is not a certificate\n";
    std::ofstream(dir + "/empty.pem");
  }
  auto client_error = [](const std::string& path) {
    auto o = client_settings();
    o.ca_file = path;
    auto c = tls::context::client(o);
    return c ? std::error_code{} : c.error();
  };
  EXPECT_EQ(client_error(dir + "/no_such_ca.pem"), tls::tls_errc::ca_file_missing);
  EXPECT_EQ(client_error(dir), tls::tls_errc::ca_file_unreadable);
  EXPECT_EQ(client_error(dir + "/not_pem.txt"), tls::tls_errc::ca_file_not_pem);
  EXPECT_EQ(client_error(dir + "/empty.pem"), tls::tls_errc::ca_file_not_pem);
  EXPECT_EQ(client_error(test_certs::get().server_key), tls::tls_errc::ca_file_without_certificate);
  EXPECT_EQ(client_error(test_certs::get().ca), std::error_code{});
  EXPECT_EQ(tls::make_error_code(tls::tls_errc::ca_file_missing).message(), "TLS: the CA file does not exist");
  auto so = server_settings();
  so.client_ca_file = dir + "/not_pem.txt";
  auto s = tls::context::server(so);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error(), tls::tls_errc::ca_file_not_pem) << s.error().message();
}

// A normal run prints nothing: the kernel TLS probe of the first handshake logs at
// debug level only. (ctest runs each test in a process of its own, where the probe is
// made here.)
TEST(TlsQuiet, AHandshakeLogsNothingAtInfoLevel) {
  ASSERT_TRUE(test_certs::get().ok);
  std::vector<std::string> lines;
  set_log_handler([&lines](log_level level, std::string_view text) {
    if (level >= log_level::info) lines.emplace_back(text);
  });
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  io_context ctx(io_context_options{.quiet = true});
  sync_wait(ctx, [](stream_listener& l, tls::context& cctx, tls::context& sctx) -> task<void> {
    auto p = co_await make_tls_pair(l, cctx, sctx);
    auto hs = co_await handshake_both(p);
    EXPECT_TRUE(hs.first && hs.second);
  }(listener, cctx, sctx));
  set_log_handler({});
  EXPECT_TRUE(lines.empty()) << lines.front();
}

TEST(TlsKernel, KernelTlsIsDetectedNotAssumed) {
  std::string why;
  bool available = tls::stream::kernel_tls_available(&why);
  if (!available) GTEST_SKIP() << "kernel TLS unavailable here: " << why;
  EXPECT_TRUE(why.empty());
}

}  // namespace

RINGIO_ALL_BACKENDS(TlsStream);
