// SPDX-License-Identifier: Apache-2.0
// http::client over https:// against a tls::stream server on the client's loop (a
// throw-away PKI from tests/tls/test_certs.hpp), on every backend.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>

#include "ringio/http/client.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/scope.hpp"
#include "ringio/tls/context.hpp"
#include "ringio/tls/error.hpp"
#include "ringio/tls/stream.hpp"
#include "support/backend_test.hpp"
#include "support/join_within.hpp"
#include "support/loopback.hpp"
#include "tls/test_certs.hpp"

namespace {

using namespace std::chrono_literals;
using ringio::result;
using ringio::task;
namespace http = ringio::http;
namespace tls = ringio::tls;

class ClientHttps : public ringio_test::backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    if (!ringio_test::test_certs::get().ok) GTEST_SKIP() << "the openssl command could not make test certificates";
  }
};

// Serves `requests` requests on each of `connections` TLS connections, each answered
// "secure <n>", where n counts requests over all connections.
task<> tls_serve(ringio::stream_listener& l, const tls::context& ctx, int connections, int requests) {
  int served = 0;
  for (int c = 0; c < connections; ++c) {
    auto sock = co_await l.accept();
    if (!sock) co_return;
    auto s = tls::stream::server(ctx, std::move(*sock));
    if (!s) co_return;
    auto shaken = co_await s->handshake();
    if (!shaken) continue;
    std::string in;
    std::array<char, 4096> buf;
    for (int r = 0; r < requests; ++r) {
      while (in.find("\r\n\r\n") == std::string::npos) {
        auto n = co_await s->recv(ringio::mutable_buffer(buf.data(), buf.size()));
        if (!n || *n == 0) co_return;
        in.append(buf.data(), *n);
      }
      in.erase(0, in.find("\r\n\r\n") + 4);
      const std::string body = "secure " + std::to_string(++served);
      const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      auto sent = co_await s->send_all(ringio::const_buffer(reply.data(), reply.size()));
      if (!sent) co_return;
    }
  }
}

http::client_options trusting_test_ca() {
  http::client_options o;
  o.tls.use_system_trust_store = false;
  o.tls.ca_file = ringio_test::test_certs::get().ca;
  return o;
}

tls::context server_context(bool rogue) {
  const auto& certs = ringio_test::test_certs::get();
  tls::server_options o;
  o.certificate_chain_file = rogue ? certs.rogue_cert : certs.server_cert;
  o.private_key_file = rogue ? certs.rogue_key : certs.server_key;
  auto ctx = tls::context::server(o);
  EXPECT_TRUE(ctx) << ctx.error().message();
  return std::move(*ctx);
}

TEST_P(ClientHttps, GetByNameAndByAddressVerifiesEither) {
  auto l = ringio_test::listen_loopback();
  const std::string port = std::to_string(ringio_test::address_of(l).port());
  const tls::context server_ctx = server_context(false);
  http::client c(trusting_test_ca());
  auto bodies = run([](ringio::stream_listener& l, const tls::context& sctx, http::client& c,
                       std::string port) -> task<std::vector<std::string>> {
    ringio::scope server;
    server.spawn(tls_serve(l, sctx, 2, 1));
    std::vector<std::string> out;
    for (const char* host : {"localhost", "127.0.0.1"}) {  // the certificate names both
      auto r = co_await c.get("https://" + std::string(host) + ":" + port + "/");
      out.push_back(r ? std::to_string(r->status) + " " + r->body : r.error().message());
    }
    (void)co_await ringio_test::join_within(server, 5s);  // gives up if the client failed
    co_return out;
  }(l, server_ctx, c, port));
  EXPECT_EQ(bodies, (std::vector<std::string>{"200 secure 1", "200 secure 2"}));
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

TEST_P(ClientHttps, KeepAliveOverTls) {
  auto l = ringio_test::listen_loopback();
  const std::string u = "https://localhost:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  const tls::context server_ctx = server_context(false);
  http::client c(trusting_test_ca());
  auto bodies = run([](ringio::stream_listener& l, const tls::context& sctx, http::client& c,
                       std::string u) -> task<std::vector<std::string>> {
    ringio::scope server;
    server.spawn(tls_serve(l, sctx, 1, 3));
    std::vector<std::string> out;
    for (int i = 0; i < 3; ++i) {
      auto r = co_await c.get(u);
      out.push_back(r ? r->body : r.error().message());
    }
    (void)co_await ringio_test::join_within(server, 5s);  // gives up if the client failed
    co_return out;
  }(l, server_ctx, c, u));
  EXPECT_EQ(bodies, (std::vector<std::string>{"secure 1", "secure 2", "secure 3"}));
  EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST_P(ClientHttps, UntrustedCertificateIsRejected) {
  auto l = ringio_test::listen_loopback();
  const std::string u = "https://localhost:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  const tls::context server_ctx = server_context(true);
  http::client c(trusting_test_ca());
  auto r = run([](ringio::stream_listener& l, const tls::context& sctx, http::client& c,
                  std::string u) -> task<result<http::client_response>> {
    ringio::scope server;
    server.spawn(tls_serve(l, sctx, 1, 1));
    auto out = co_await c.get(u);
    (void)co_await ringio_test::join_within(server, 5s);  // gives up if the client failed
    co_return out;
  }(l, server_ctx, c, u));
  ASSERT_FALSE(r);
  EXPECT_TRUE(tls::is_verification_error(r.error())) << r.error().message();
}

TEST_P(ClientHttps, HandshakeTimeout) {
  auto l = ringio_test::listen_loopback();  // accepts (backlog) but never speaks TLS
  const std::string u = "https://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  http::client_options o = trusting_test_ca();
  o.tls_handshake_timeout = 150ms;
  http::client c(o);
  auto r = run([](http::client& c, std::string u) -> task<result<http::client_response>> {
    auto out = co_await c.get(u);
    co_return out;
  }(c, u));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), http::client_errc::tls_handshake_timeout) << r.error().message();
}

TEST_P(ClientHttps, BadCaFileFailsBeforeAnyConnectionWithItsReason) {
  auto l = ringio_test::listen_loopback();  // would accept a connection
  const std::string u = "https://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  http::client_options o = trusting_test_ca();
  o.tls.ca_file = ringio_test::test_certs::get().dir + "/no_such_ca.pem";
  http::client c(o);
  auto r = run(
      [](http::client& c, std::string u) -> task<result<http::client_response>> { co_return co_await c.get(u); }(c, u));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), tls::tls_errc::ca_file_missing) << r.error().message();
  EXPECT_EQ(r.error().message(), "TLS: the CA file does not exist");
  EXPECT_EQ(c.stats().connections_opened, 0u);
}

RINGIO_ALL_BACKENDS(ClientHttps);

}  // namespace
