// SPDX-License-Identifier: Apache-2.0
// tls::stream against OpenSSL's own programs: a ringio client against `openssl
// s_server`, a ringio server against `openssl s_client`, and a TLS 1.2 renegotiation
// that the server refuses.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/child_process.hpp"
#include "support/loopback.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class TlsInterop : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(test_certs::get().ok);
    if (::access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl";
  }
};

// A TCP port that was free a moment ago (for a child that must be told its port).
std::uint16_t free_port() {
  auto l = stream_listener::bind(socket_address::loopback(0));
  EXPECT_TRUE(l);
  auto a = l->local_address();
  return a ? a->port() : 0;
}

// Reads the child's stdout until a line equal to `want` (or the timeout).
bool saw_line(child_process& child, const std::string& want, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto line = child.read_line(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    if (!line) return false;
    if (*line == want) return true;
  }
  return false;
}

// Receives until `n` bytes came or the stream ended.
task<std::string> recv_text(tls::stream& s, std::size_t n) {
  std::vector<std::byte> buf(n);
  auto got = co_await with_timeout(s.recv_exact(buf), 5s);
  if (!got) co_return "error: " + got.error().message();
  co_return std::string(reinterpret_cast<const char*>(buf.data()), *got);
}

TEST_P(TlsInterop, RingioClientAgainstOpensslServer) {
  const auto& c = test_certs::get();
  std::uint16_t port = free_port();
  child_process server({"/usr/bin/openssl", "s_server", "-cert", c.server_cert, "-key", c.server_key, "-accept",
                        "127.0.0.1:" + std::to_string(port), "-rev", "-naccept", "1", "-alpn", "http/1.1"});
  ASSERT_TRUE(server.started());
  ASSERT_TRUE(saw_line(server, "ACCEPT", 5s)) << server.stderr_text();
  auto o = client_settings();
  o.alpn = {"http/1.1"};
  auto cctx = make_client_context(o);
  auto echoed = run([](tls::context& cctx, std::uint16_t port) -> task<std::string> {
    auto sock = co_await stream_socket::connect(socket_address::loopback(port));
    if (!sock) co_return "connect: " + sock.error().message();
    auto s = tls::stream::client(cctx, std::move(*sock), "localhost");
    if (!s) co_return "client: " + s.error().message();
    auto hs = co_await s->handshake(5s);
    if (!hs) co_return "handshake: " + hs.error().message();
    EXPECT_EQ(s->alpn(), "http/1.1");
    auto sent = co_await s->send_all(std::string_view("hello ringio\n"));
    EXPECT_TRUE(sent);
    std::string back = co_await recv_text(*s, 13);
    (void)co_await s->shutdown(1s);
    co_return back;
  }(cctx, port));
  EXPECT_EQ(echoed, "oignir olleh\n");
}

// Runs `openssl s_client` with `input` lines fed slowly on its stdin (then a pause, so
// that replies arrive before it sees the end of input and closes).
child_process s_client(std::uint16_t port, const std::string& input, const std::string& extra) {
  const auto& c = test_certs::get();
  std::string cmd = "(sleep 0.2; printf '" + input +
                    "'; sleep 1) | /usr/bin/openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " -CAfile " +
                    c.ca + " -servername localhost -verify_return_error " + extra;
  return child_process({"/bin/sh", "-c", cmd});
}

TEST_P(TlsInterop, RingioServerAgainstOpensslClient) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto client = s_client(address_of(listener).port(), "hello\\n", "-quiet -no_ign_eof");
  ASSERT_TRUE(client.started());
  auto outcome = run([](stream_listener& l, tls::context& sctx) -> task<std::string> {
    auto sock = co_await with_timeout(l.accept(), 5s);
    if (!sock) co_return "accept: " + sock.error().message();
    auto s = tls::stream::server(sctx, std::move(*sock));
    auto hs = co_await s->handshake(5s);
    if (!hs) co_return "handshake: " + hs.error().message();
    std::string line = co_await recv_text(*s, 6);
    auto sent = co_await s->send_all(std::string_view("echo:"));
    EXPECT_TRUE(sent);
    auto sent2 = co_await s->send_all(std::string_view(line));
    EXPECT_TRUE(sent2);
    // s_client ends with close_notify once its input ends: a clean end of stream.
    std::vector<std::byte> buf(16);
    auto end = co_await with_timeout(s->recv(buf), 5s);
    if (!end) co_return "end: " + end.error().message();
    EXPECT_EQ(*end, 0u);
    co_return line;
  }(listener, sctx));
  EXPECT_EQ(outcome, "hello\n");
  EXPECT_TRUE(saw_line(client, "echo:hello", 5s)) << client.stderr_text();
  EXPECT_EQ(client.wait(5s), 0) << client.stderr_text();
}

// RFC 7301 3.2, seen from OpenSSL's own client: -alpn with nothing in common gets the
// fatal no_application_protocol alert.
TEST_P(TlsInterop, OpensslClientWithNoCommonAlpnGetsNoApplicationProtocol) {
  auto listener = listen_loopback();
  auto so = server_settings();
  so.alpn = {"http/1.1"};
  auto sctx = make_server_context(so);
  auto client = s_client(address_of(listener).port(), "", "-alpn foo");
  ASSERT_TRUE(client.started());
  auto outcome = run([](stream_listener& l, tls::context& sctx) -> task<std::string> {
    auto sock = co_await with_timeout(l.accept(), 5s);
    if (!sock) co_return "accept: " + sock.error().message();
    auto s = tls::stream::server(sctx, std::move(*sock));
    auto hs = co_await s->handshake(5s);
    co_return hs ? "handshake succeeded" : "failed";
  }(listener, sctx));
  EXPECT_EQ(outcome, "failed");
  EXPECT_NE(client.wait(5s), std::optional<int>(0));
  EXPECT_NE(client.stderr_text().find("no application protocol"), std::string::npos) << client.stderr_text();
}

TEST_P(TlsInterop, RenegotiationIsRefused) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  // Interactive s_client: a line "R" asks for a TLS 1.2 renegotiation.
  auto client = s_client(address_of(listener).port(), "R\\n", "-tls1_2");
  ASSERT_TRUE(client.started());
  auto outcome = run([](stream_listener& l, tls::context& sctx) -> task<std::string> {
    auto sock = co_await with_timeout(l.accept(), 5s);
    if (!sock) co_return "accept: " + sock.error().message();
    auto s = tls::stream::server(sctx, std::move(*sock));
    auto hs = co_await s->handshake(5s);
    if (!hs) co_return "handshake: " + hs.error().message();
    std::vector<std::byte> buf(16);
    auto r = co_await with_timeout(s->recv(buf), 5s);
    if (!r) co_return "error: " + r.error().message();
    co_return "data: " + std::to_string(*r);
  }(listener, sctx));
  // The renegotiation never happens: the client gives up on it, with no data sent.
  // The server answers the second ClientHello with a no_renegotiation warning; the
  // client then ends the connection with a fatal alert, which the pending recv reports.
  EXPECT_NE(outcome.find("alert handshake failure"), std::string::npos) << outcome;
  EXPECT_TRUE(client.wait(5s).has_value());  // then everything it wrote is readable
  std::string err = client.stderr_text();
  EXPECT_NE(err.find("no renegotiation"), std::string::npos) << err;
}

}  // namespace

RINGIO_ALL_BACKENDS(TlsInterop);
