// SPDX-License-Identifier: Apache-2.0
// client::connect_websocket — the client side of the opening handshake (RFC 6455
// section 4.1) on a connection of http::client (its connect, TLS and timeouts).
#include <array>
#include <string>

#include "client/client_connection.hpp"
#include "handshake.hpp"
#include "permessage_deflate.hpp"
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
  if (text.find('#') != std::string_view::npos) return {};  // RFC 6455 section 3: no fragment
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
  if (o.options.deflate.enabled)
    append_field(out, "Sec-WebSocket-Extensions", detail::deflate_offer(o.options.deflate));
  if (!user_agent.empty()) append_field(out, "User-Agent", user_agent);
  out.append("\r\n");
}

bool is_field_text(std::string_view s) noexcept {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// invalid_argument for subprotocols or an origin that cannot go in a field.
std::error_code check_options(const websocket_connect_options& o) noexcept {
  for (const std::string& p : o.subprotocols) {
    if (p.empty() || !is_field_text(p) || p.find(',') != std::string::npos)
      return std::make_error_code(std::errc::invalid_argument);
  }
  if (!is_field_text(o.origin)) return std::make_error_code(std::errc::invalid_argument);
  return {};
}

bool offered(const websocket_connect_options& o, std::string_view chosen) noexcept {
  for (const std::string& p : o.subprotocols) {
    if (p == chosen) return true;
  }
  return false;
}

// The subprotocol the server chose, after checking its 101 response to `key`; the
// extension agreed in `deflate`.
result<std::string> check_upgrade_response(const response_head& head, std::string_view key,
                                           const websocket_connect_options& o, detail::deflate_agreement& deflate) {
  if (head.status != 101 || !detail::header_has_token(head.headers, "upgrade", "websocket") ||
      !detail::header_has_token(head.headers, "connection", "upgrade"))
    return unexpected(errc(websocket_errc::handshake_failed));
  std::string extensions;
  for (const header& h : head.headers) {
    if (iequals(h.name, "sec-websocket-extensions")) extensions.append(extensions.empty() ? "" : ",").append(h.value);
  }
  if (!detail::check_deflate_answer(extensions, o.options.deflate, o.options.deflate.enabled, deflate))
    return unexpected(errc(websocket_errc::handshake_failed));
  if (head.headers.get("sec-websocket-accept") != detail::websocket_accept_value(key))
    return unexpected(errc(websocket_errc::bad_accept));
  std::string chosen(head.headers.get("sec-websocket-protocol"));
  if (!chosen.empty() && !offered(o, chosen)) return unexpected(errc(websocket_errc::handshake_failed));
  return chosen;
}

// Sends the request in c.out and reads the response head into `head` before
// `deadline_ns`; the size of the head (what follows it in c.buffer is the server's).
task<result<std::size_t>> exchange_heads(detail::client_connection& c, std::int64_t deadline_ns, std::size_t max_head,
                                         response_head& head) {
  std::size_t head_size = 0;
  std::error_code failure;
  const std::array<const_buffer, 1> parts{const_buffer(c.out.data(), c.out.size())};
  auto sent = co_await detail::send_parts(c, parts, deadline_ns);
  if (!sent) failure = sent.error();
  while (!failure && head_size == 0) {
    auto parsed = parse_response_head({c.buffer.get(), c.end}, false, head, max_head);
    if (!parsed) {
      failure = parsed.error();
    } else if (*parsed > 0) {
      head_size = *parsed;
    } else if (c.end == c.capacity) {
      failure = make_error_code(client_errc::head_too_large);
    } else {
      auto n = co_await detail::receive_some(c, {c.buffer.get() + c.end, c.capacity - c.end}, deadline_ns);
      if (!n) {
        failure = n.error();
      } else if (*n == 0) {
        failure = make_error_code(client_errc::connection_closed);
      } else {
        c.end += *n;
      }
    }
  }
  if (failure == std::errc::timed_out) failure = make_error_code(client_errc::head_timeout);
  if (failure) co_return unexpected(failure);
  co_return head_size;
}

}  // namespace

task<result<websocket>> client::connect_websocket(std::string_view url_text, const websocket_connect_options& opts) {
  const std::string http_url = as_http_url(url_text);
  const result<url> target = parse_url(http_url);
  const std::error_code invalid = http_url.empty() || !target ? errc(websocket_errc::bad_url) : check_options(opts);
  if (invalid) co_return unexpected(invalid);
  auto conn = co_await connect(*target);
  if (!conn) co_return unexpected(conn.error());
  detail::client_connection& c = **conn;
  const std::string key = detail::websocket_random_key();
  build_upgrade_request(c.out, *target, key, opts, opts_.user_agent);
  response_head head;
  auto head_size =
      co_await exchange_heads(c, ringio::detail::deadline_after(opts_.head_timeout), opts_.max_head_bytes, head);
  if (!head_size) co_return unexpected(head_size.error());
  detail::deflate_agreement deflate;
  auto chosen = check_upgrade_response(head, key, opts, deflate);
  if (!chosen) co_return unexpected(chosen.error());
  const std::string_view early(c.buffer.get() + *head_size, c.end - *head_size);
  websocket ws = websocket::client(std::move(*conn), early, opts.options, std::move(*chosen), deflate);
  ws.start_keep_alive();
  co_return ws;
}

task<result<websocket>> client::connect_websocket(std::string_view url_text) {
  static const websocket_connect_options defaults;
  return connect_websocket(url_text, defaults);
}

}  // namespace ringio::http
