// SPDX-License-Identifier: Apache-2.0
// HTTPS: the http::server connection code serving straight over a tls::stream. The
// connection reads and writes through the stream at each I/O call site (see
// connection.hpp); here are the handshake, the admission, and the close_notify at the end.
#include "ringio/http/https.hpp"

#include <chrono>
#include <utility>

#include "connection.hpp"
#include "ringio/log.hpp"
#include "ringio/serve.hpp"
#include "ringio/tls/stream.hpp"
#include "server_core.hpp"

namespace ringio::http {

task<void> serve_tls_connection(server& srv, const tls::context& ctx, stream_socket s) {
  auto t = tls::stream::server(ctx, std::move(s));
  if (!t) co_return;
  auto hs = co_await t->handshake();
  if (!hs) {
    if (log_enabled(log_level::debug))
      log(log_level::debug, "https: handshake failed: %s", hs.error().message().c_str());
    co_return;
  }
  detail::server_core& core = *srv.core_;
  detail::connection conn(core, *t);
  if (!core.admit()) {
    co_await conn.refuse();
    co_return;
  }
  detail::admission held(core);
  co_await conn.run();
  // Connection: close, the idle timeout, a drain, the client's close_notify: close_notify
  // (not after a send timeout or a stop). The socket closes with the stream.
  co_await conn.send_close_notify();
}

task<void> serve_tls(server& srv, const tls::context& ctx, stream_listener& listener, std::stop_token stop) {
  serve_options options{.drain_timeout = std::chrono::milliseconds::max(), .on_drain = [&srv] { srv.drain(); }};
  auto served = co_await ringio::serve(
      listener, [&srv, &ctx](stream_socket s) { return serve_tls_connection(srv, ctx, std::move(s)); },
      std::move(options), std::move(stop));
  (void)served;
}

}  // namespace ringio::http
