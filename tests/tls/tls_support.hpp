// SPDX-License-Identifier: Apache-2.0
// tls_support — contexts made from the test PKI, and TCP connections over 127.0.0.1
// wrapped as TLS client and server streams.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/loopback.hpp"
#include "test_certs.hpp"

namespace ringio_test {

inline ringio::tls::server_options server_settings() {
  const auto& c = test_certs::get();
  ringio::tls::server_options o;
  o.certificate_chain_file = c.server_cert;
  o.private_key_file = c.server_key;
  return o;
}

inline ringio::tls::client_options client_settings() {
  ringio::tls::client_options o;
  o.use_system_trust_store = false;
  o.ca_file = test_certs::get().ca;
  return o;
}

inline ringio::tls::context make_server_context(const ringio::tls::server_options& o = server_settings()) {
  auto c = ringio::tls::context::server(o);
  EXPECT_TRUE(c) << c.error().message();
  return c ? std::move(*c) : ringio::tls::context{};
}

inline ringio::tls::context make_client_context(const ringio::tls::client_options& o = client_settings()) {
  auto c = ringio::tls::context::client(o);
  EXPECT_TRUE(c) << c.error().message();
  return c ? std::move(*c) : ringio::tls::context{};
}

/// A connected TCP pair over 127.0.0.1: {client side, server side}.
inline ringio::task<std::pair<ringio::stream_socket, ringio::stream_socket>> tcp_pair(ringio::stream_listener& l) {
  auto c = co_await ringio::stream_socket::connect(address_of(l));
  EXPECT_TRUE(c) << c.error().message();
  auto s = co_await l.accept();
  EXPECT_TRUE(s) << s.error().message();
  if (!c || !s) co_return std::pair<ringio::stream_socket, ringio::stream_socket>{};
  co_return std::pair{std::move(*c), std::move(*s)};
}

/// Client and server TLS streams over a fresh TCP pair, not yet handshaken.
struct tls_pair {
  ringio::tls::stream client, server;
};

inline ringio::task<tls_pair> make_tls_pair(ringio::stream_listener& l, const ringio::tls::context& cctx,
                                            const ringio::tls::context& sctx, std::string name = "localhost") {
  auto sockets = co_await tcp_pair(l);
  auto c = ringio::tls::stream::client(cctx, std::move(sockets.first), name);
  auto s = ringio::tls::stream::server(sctx, std::move(sockets.second));
  EXPECT_TRUE(c) << c.error().message();
  EXPECT_TRUE(s) << s.error().message();
  if (!c || !s) co_return tls_pair{};
  co_return tls_pair{std::move(*c), std::move(*s)};
}

/// Both handshakes, concurrently: {client's result, server's result}.
inline ringio::task<std::pair<ringio::result<void>, ringio::result<void>>> handshake_both(tls_pair& p) {
  auto [c, s] = co_await ringio::when_all(p.client.handshake(), p.server.handshake());
  co_return std::pair{c, s};
}

}  // namespace ringio_test
