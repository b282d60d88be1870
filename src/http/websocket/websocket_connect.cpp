// SPDX-License-Identifier: Apache-2.0
// client::connect_websocket — the client side of the opening handshake (RFC 6455
// section 4.1) on a connection of http::client (its connect, TLS and timeouts).
#include <array>
#include <string>

#include "client/client_connection.hpp"
#include "handshake.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/http/client.hpp"
#include "ringio/http/response_head.hpp"
#include "ringio/http/websocket.hpp"

namespace ringio::http {

namespace {

std::error_code errc(websocket_errc e) noexcept { return make_error_code(e); }

// "ws://..." as "http://...", "wss://..." as "https://..." (any case); "" otherwise.
std::string as_http_url(std::string_view text) {
  const std::size_t colon = text.find("://");
  if (colon == std::string_view::npos) return {};
  const std::string_view scheme = text.substr(0, colon);
  if (iequals(scheme, "ws")) return "http" + std::string(text.substr(colon));
  if (iequals(scheme, "wss")) return "https" + std::string(text.substr(colon));
  return {};
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

void build_upgrade_request(std::string& out, const url& t, std::string_view key, const websocket_connect_options& o,
                           std::string_view user_agent) {
  out.clear();
  out.append("GET ");
  if (t.target.empty() || t.target.front() == '?') out += '/';
  out.append(t.target).append(" HTTP/1.1\r\nHost: ");
  if (t.ipv6_literal) out += '[';
  out.append(t.host);
  if (t.ipv6_literal) out += ']';
  if (t.port != t.default_port()) out.append(":").append(std::to_string(t.port));
  out.append("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n");
  append_field(out, "Sec-WebSocket-Key", key);
  append_field(out, "Sec-WebSocket-Version", "13");
  if (!o.subprotocols.empty()) {
    std::string list;
    for (const std::string& p : o.subprotocols) list.append(list.empty() ? "" : ", ").append(p);
    append_field(out, "Sec-WebSocket-Protocol", list);
  }
  if (!o.origin.empty()) append_field(out, "Origin", o.origin);
  if (!user_agent.empty()) append_field(out, "User-Agent", user_agent);
  out.append("\r\n");
}

bool is_field_text(std::string_view s) noexcept {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

task<result<websocket>> client::connect_websocket(std::string_view url_text, websocket_connect_options opts) {
  const std::string http_url = as_http_url(url_text);
  if (http_url.empty()) co_return unexpected(errc(websocket_errc::bad_url));
  auto target = parse_url(http_url);
  if (!target) co_return unexpected(errc(websocket_errc::bad_url));
  for (const std::string& p : opts.subprotocols) {
    if (p.empty() || !is_field_text(p) || p.find(',') != std::string::npos)
      co_return unexpected(std::make_error_code(std::errc::invalid_argument));
  }
  if (!is_field_text(opts.origin)) co_return unexpected(std::make_error_code(std::errc::invalid_argument));

  auto conn = co_await connect(*target);
  if (!conn) co_return unexpected(conn.error());
  detail::client_connection& c = **conn;
  const std::string key = detail::websocket_random_key();
  build_upgrade_request(c.out, *target, key, opts, opts_.user_agent);

  const std::int64_t deadline = ringio::detail::deadline_after(opts_.head_timeout);
  const std::array<const_buffer, 1> parts{const_buffer(c.out.data(), c.out.size())};
  auto sent = co_await detail::send_parts(c, parts, deadline);
  if (!sent) {
    co_return unexpected(sent.error() == std::errc::timed_out ? make_error_code(client_errc::head_timeout)
                                                              : sent.error());
  }
  response_head head;
  std::size_t head_size = 0;
  for (;;) {
    auto parsed = parse_response_head({c.buffer.get(), c.end}, false, head, opts_.max_head_bytes);
    if (!parsed) co_return unexpected(parsed.error());
    if (*parsed > 0) {
      head_size = *parsed;
      break;
    }
    if (c.end == c.capacity) co_return unexpected(make_error_code(client_errc::head_too_large));
    auto n = co_await detail::receive_some(c, {c.buffer.get() + c.end, c.capacity - c.end}, deadline);
    if (!n) {
      co_return unexpected(n.error() == std::errc::timed_out ? make_error_code(client_errc::head_timeout)
                                                             : n.error());
    }
    if (*n == 0) co_return unexpected(make_error_code(client_errc::connection_closed));
    c.end += *n;
  }
  if (head.status != 101 || !detail::header_has_token(head.headers, "upgrade", "websocket") ||
      !detail::header_has_token(head.headers, "connection", "upgrade") ||
      head.headers.contains("sec-websocket-extensions"))
    co_return unexpected(errc(websocket_errc::handshake_failed));
  if (head.headers.get("sec-websocket-accept") != detail::websocket_accept_value(key))
    co_return unexpected(errc(websocket_errc::bad_accept));
  std::string chosen(head.headers.get("sec-websocket-protocol"));
  if (!chosen.empty()) {
    bool offered = false;
    for (const std::string& p : opts.subprotocols) offered = offered || p == chosen;
    if (!offered) co_return unexpected(errc(websocket_errc::handshake_failed));
  }
  const std::string_view early(c.buffer.get() + head_size, c.end - head_size);
  co_return websocket::client(std::move(*conn), early, opts.options, std::move(chosen));
}

}  // namespace ringio::http
