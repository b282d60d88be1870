// SPDX-License-Identifier: Apache-2.0
// HTTPS: the http::server connection code serving straight over a tls::stream. The
// connection reads and writes through the stream at each I/O call site (see
// connection.hpp); here are the handshake, the admission, and the close_notify at the end.
#include "ringio/http/https.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <utility>

#include "connection.hpp"
#include "ringio/log.hpp"
#include "ringio/serve.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/tls/stream.hpp"
#include "server_core.hpp"

namespace ringio::http {
namespace {

constexpr std::byte tls_handshake_record{0x16};

}  // namespace

task<void> serve_tls_connection(server& srv, const tls::context& ctx, stream_socket s) {
  // A TLS client speaks first, with a handshake record (content type 22). Anything else
  // is most likely plain HTTP sent to the wrong port: a plain-text 400 says so (as nginx
  // does), where a failed handshake would only close.
  const auto begun = std::chrono::steady_clock::now();
  const std::chrono::nanoseconds limit = ctx.handshake_timeout();  // 0 or less: no bound
  std::byte first{};
  result<std::size_t> peeked;
  if (limit > std::chrono::nanoseconds::zero()) {
    peeked = co_await with_timeout(s.recv(mutable_buffer(&first, 1), MSG_PEEK), limit);
  } else {
    peeked = co_await s.recv(mutable_buffer(&first, 1), MSG_PEEK);
  }
  if (!peeked || *peeked == 0) co_return;
  if (first != tls_handshake_record) {
    detail::connection conn(*srv.core_, std::move(s));
    co_await conn.refuse_plain_http();
    co_return;
  }
  auto t = tls::stream::server(ctx, std::move(s));
  if (!t) co_return;
  // The handshake gets what is left of the context's handshake timeout.
  const auto spent = std::chrono::steady_clock::now() - begun;
  const auto left = limit > std::chrono::nanoseconds::zero()
                        ? std::max<std::chrono::nanoseconds>(limit - spent, std::chrono::milliseconds(1))
                        : limit;
  auto hs = co_await t->handshake(left);
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
