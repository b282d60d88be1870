// SPDX-License-Identifier: Apache-2.0
// accept_websocket — the server side of the opening handshake (RFC 6455 section 4.2),
// and the session run on the upgraded connection.
#include "ringio/http/websocket_accept.hpp"

#include <stop_token>

#include "handshake.hpp"
#include "permessage_deflate.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/timeout.hpp"

namespace ringio::http {

namespace {

struct stop_on {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

// Runs `session` until it returns, its waits stopped by the server's drain as well as
// by the connection's own stop; then closes a websocket it left open.
task<void> run_session(upgraded_connection& conn, const websocket_session& session, const websocket_options& opts,
                       std::string subprotocol, detail::deflate_agreement deflate) {
  websocket ws = websocket::server(conn, opts, std::move(subprotocol), deflate);
  ws.start_keep_alive();
  {
    std::stop_source inner;
    const std::stop_token own = co_await current_stop_token();
    std::stop_callback<stop_on> on_own(own, stop_on{&inner});
    std::stop_callback<stop_on> on_drain(conn.drain, stop_on{&inner});
    task<void> t = session(ws);
    const std::stop_token token = inner.get_token();
    ringio::detail::token_awaiter<void> op{t, &token};
    co_await op;
  }
  if (ws.is_open()) {
    auto closed = co_await ws.close(conn.drain.stop_requested() ? websocket::going_away : websocket::normal_closure);
    (void)closed;
  }
  co_await ws.stop_keep_alive();  // before the connection ends: it uses the stream
}

// Whether the client offered `name` in a Sec-WebSocket-Protocol field (exact match:
// subprotocol names are case-sensitive).
bool client_offers(const request& req, std::string_view name) {
  bool found = false;
  for (const header& h : req.headers()) {
    if (iequals(h.name, "sec-websocket-protocol"))
      detail::for_each_token(h.value, [&](std::string_view t) { found = found || t == name; });
  }
  return found;
}

response refuse(int status) { return response::text(status, "WebSocket upgrade refused\n"); }

}  // namespace

bool is_websocket_upgrade(const request& req) noexcept {
  return detail::header_has_token(req.headers(), "upgrade", "websocket");
}

response accept_websocket(const request& req, websocket_session session, const websocket_accept_options& opts) {
  if (req.method() != method::get || req.version_minor() != 1 || !is_websocket_upgrade(req) ||
      !detail::header_has_token(req.headers(), "connection", "upgrade"))
    return refuse(400);
  if (req.header("sec-websocket-version") != "13") {
    response r = refuse(426);
    r.set_header("Sec-WebSocket-Version", "13");
    return r;
  }
  const std::string_view key = req.header("sec-websocket-key");
  if (!detail::valid_websocket_key(key)) return refuse(400);
  std::size_t keys = 0;  // RFC 6455 section 11.3.1: the field appears once
  for (const header& h : req.headers()) keys += iequals(h.name, "sec-websocket-key") ? 1 : 0;
  if (keys != 1) return refuse(400);
  if (opts.check_origin && !opts.check_origin(req.header("origin"))) return refuse(403);
  std::string chosen;
  for (const std::string& ours : opts.subprotocols) {
    if (client_offers(req, ours)) {
      chosen = ours;
      break;
    }
  }
  std::string extensions;
  detail::deflate_agreement deflate;
  if (!detail::accept_deflate_offer(req.headers(), opts.options.deflate, extensions, deflate)) extensions.clear();
  response r = response::upgrade(
      [session = std::move(session), options = opts.options, chosen, deflate](upgraded_connection& conn) -> task<void> {
        co_await run_session(conn, session, options, chosen, deflate);
      });
  r.set_header("Upgrade", "websocket");
  r.set_header("Connection", "Upgrade");
  r.set_header("Sec-WebSocket-Accept", detail::websocket_accept_value(key));
  if (!chosen.empty()) r.set_header("Sec-WebSocket-Protocol", chosen);
  if (!extensions.empty()) r.set_header("Sec-WebSocket-Extensions", extensions);
  return r;
}

response accept_websocket(const request& req, websocket_session session) {
  static const websocket_accept_options defaults;
  return accept_websocket(req, std::move(session), defaults);
}

}  // namespace ringio::http
