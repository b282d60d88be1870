// SPDX-License-Identifier: Apache-2.0
// ringio/http/websocket_accept.hpp — the server side of the WebSocket opening
// handshake: a route handler answers an upgrade request with accept_websocket(), and
// the session runs on the connection once the 101 response is sent.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ringio/http/request.hpp"
#include "ringio/http/response.hpp"
#include "ringio/http/websocket.hpp"
#include "ringio/http/websocket_options.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

/// What runs on an accepted WebSocket connection. When it returns, a websocket still
/// open is closed (1000, or 1001 when the server drains) and the connection ends.
using websocket_session = std::function<task<void>(websocket&)>;

/// How accept_websocket() decides.
struct websocket_accept_options {
  /// The subprotocols this server speaks, most preferred first: the first one the
  /// client also offers (Sec-WebSocket-Protocol) is chosen; none in common: none chosen.
  std::vector<std::string> subprotocols{};
  /// Checks the Origin field ("" when absent); false answers 403. Empty: any origin.
  std::function<bool(std::string_view origin)> check_origin{};
  /// The websocket's limits and timeouts.
  websocket_options options{};
};

/// Answers a WebSocket upgrade request (RFC 6455 section 4.2): "101 Switching
/// Protocols" with Sec-WebSocket-Accept (and the chosen subprotocol), after which
/// `session` runs with the websocket. A request that is not a valid upgrade gets 400
/// (not GET over HTTP/1.1, Upgrade without "websocket", Connection without "upgrade",
/// a Sec-WebSocket-Key that is not 16 bytes in base64), 426 with
/// "Sec-WebSocket-Version: 13" for another version, 403 when check_origin refuses.
/// While the session runs the server's drain stops its waits (operation_canceled).
[[nodiscard]] response accept_websocket(const request& req, websocket_session session,
                                        const websocket_accept_options& opts);
/// accept_websocket(req, session, opts) with default options.
[[nodiscard]] response accept_websocket(const request& req, websocket_session session);

/// Whether `req` asks for a WebSocket upgrade (an Upgrade field naming "websocket"):
/// a route can serve pages and a WebSocket on one path.
[[nodiscard]] bool is_websocket_upgrade(const request& req) noexcept;

}  // namespace ringio::http
