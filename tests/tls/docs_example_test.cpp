// SPDX-License-Identifier: Apache-2.0
// The example of docs/tls.md, compiled and run: a TLS echo server and a client.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>

#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/loopback.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

// --- docs/tls.md example begins ---
task<void> serve_one(tls::context& ctx, tcp_stream s) {
  auto tls_stream = tls::stream::server(ctx, std::move(s));
  if (!tls_stream) co_return;
  auto hs = co_await tls_stream->handshake();  // ctx's handshake_timeout
  if (!hs) {
    log(log_level::info, "handshake failed: %s", hs.error().message().c_str());
    co_return;
  }
  std::array<std::byte, 4096> buf;
  for (;;) {
    auto n = co_await tls_stream->recv(buf);
    if (!n || *n == 0) break;  // error, or close_notify
    auto sent = co_await tls_stream->send_all(std::span(buf).first(*n));
    if (!sent) break;
  }
  (void)co_await tls_stream->shutdown(1s);  // close_notify both ways
}

task<std::string> ask(tls::context& ctx, socket_address server, std::string_view question) {
  auto sock = co_await tcp_stream::connect(server);
  if (!sock) co_return "connect: " + sock.error().message();
  auto s = tls::stream::client(ctx, std::move(*sock), "localhost");  // SNI + name checked
  if (!s) co_return "tls: " + s.error().message();
  auto hs = co_await s->handshake(5s);
  if (!hs) co_return "handshake: " + hs.error().message();  // e.g. "certificate verify failed: ..."
  auto sent = co_await s->send_all(question);
  if (!sent) co_return "send: " + sent.error().message();
  std::string answer(question.size(), '\0');
  auto got = co_await with_timeout(s->recv_exact(answer), 5s);
  if (!got) co_return "recv: " + got.error().message();
  (void)co_await s->shutdown(1s);
  co_return answer;
}
// --- docs/tls.md example ends ---

TEST(TlsDocsExample, EchoServerAndClient) {
  ASSERT_TRUE(ringio_test::test_certs::get().ok);
  auto sctx = ringio_test::make_server_context();
  auto cctx = ringio_test::make_client_context();
  io_context ctx;
  auto listener = ringio_test::listen_loopback();
  auto answer = sync_wait(ctx, [](stream_listener& l, tls::context& sctx, tls::context& cctx) -> task<std::string> {
    auto at = ringio_test::address_of(l);
    auto [accepted, answer] = co_await when_all(
        [](stream_listener& l, tls::context& sctx) -> task<void> {
          auto s = co_await l.accept();
          if (s) co_await serve_one(sctx, std::move(*s));
        }(l, sctx),
        ask(cctx, at, "hello over TLS"));
    (void)accepted;
    co_return answer;
  }(listener, sctx, cctx));
  EXPECT_EQ(answer, "hello over TLS");
}

}  // namespace
