// SPDX-License-Identifier: Apache-2.0
// HTTPS: the http::server connection code serving straight over a tls::stream. The
// connection reads and writes through the stream at each I/O call site (see
// connection.hpp); here are the handshake, the admission, and the close_notify at the end.
#include "ringio/http/https.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>

#include "connection.hpp"
#include "ringio/log.hpp"
#include "ringio/serve.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/tls/stream.hpp"
#include "server_core.hpp"

namespace ringio::http {
namespace {

constexpr std::byte tls_handshake_record{0x16};

}  // namespace

task<void> serve_tls_connection(server& srv, const tls::context& ctx, stream_socket s) {
  // Counted from accept: a flood of handshakes is bounded by max_connections like plain
  // connections. One over the limit is closed at once: a 503 would first need the very
  // handshake that the limit is there to bound.
  detail::server_core& core = *srv.core_;
  if (!core.admit()) {
    core.log_limited(core.last_limit_log, "https: connection limit reached (" +
                                              std::to_string(core.opts.max_connections) +
                                              " open); closing new connections before their handshake");
    co_return;
  }
  detail::admission held(core);
  // Until the connection code runs, a drain ends the connection at once (no request is in
  // progress), as does the task's own stop.
  std::stop_source before_request;
  const std::stop_token outer = co_await current_stop_token();
  const std::stop_token hs_token = before_request.get_token();
  std::optional<tls::stream> t;
  {
    std::stop_callback<detail::forward_stop> on_outer(outer, detail::forward_stop{&before_request});
    std::stop_callback<detail::forward_stop> on_drain(core.drain_token(), detail::forward_stop{&before_request});
    // A TLS client speaks first, with a handshake record (content type 22). Anything else
    // is most likely plain HTTP sent to the wrong port: a plain-text 400 says so (as nginx
    // does), where a failed handshake would only close.
    const auto begun = std::chrono::steady_clock::now();
    const std::chrono::nanoseconds limit = ctx.handshake_timeout();  // 0 or less: no bound
    std::byte first{};
    result<std::size_t> peeked;
    if (limit > std::chrono::nanoseconds::zero()) {
      peeked = co_await with_timeout(s.recv(mutable_buffer(&first, 1), MSG_PEEK).with_stop(hs_token), limit);
    } else {
      peeked = co_await s.recv(mutable_buffer(&first, 1), MSG_PEEK).with_stop(hs_token);
    }
    if (!peeked || *peeked == 0) co_return;
    if (first != tls_handshake_record) {
      detail::connection conn(core, s);
      co_await conn.refuse_plain_http();
      co_return;
    }
    auto made = tls::stream::server(ctx, std::move(s));
    if (!made) co_return;
    t.emplace(std::move(*made));
    // The handshake gets what is left of the context's handshake timeout.
    const auto spent = std::chrono::steady_clock::now() - begun;
    const auto left = limit > std::chrono::nanoseconds::zero()
                          ? std::max<std::chrono::nanoseconds>(limit - spent, std::chrono::milliseconds(1))
                          : limit;
    detail::under_token<result<void>> handshake{t->handshake(left), &hs_token};
    auto hs = co_await handshake;
    if (!hs) {
      if (log_enabled(log_level::debug))
        log(log_level::debug, "https: handshake failed: %s", hs.error().message().c_str());
      co_return;
    }
  }
  // Then close_notify (see connection::serve); the socket closes with the stream.
  task<void> served = detail::connection::serve(core, *t);
  co_await std::move(served);
}

task<void> serve_tls(server& srv, const tls::context& ctx, stream_listener& listener, std::stop_token stop) {
  serve_options options{.drain_timeout = std::chrono::milliseconds::max(), .on_drain = [&srv] { srv.drain(); }};
  auto served = co_await ringio::serve(
      listener, [&srv, &ctx](stream_socket s) { return serve_tls_connection(srv, ctx, std::move(s)); },
      std::move(options), std::move(stop));
  (void)served;
}

}  // namespace ringio::http
