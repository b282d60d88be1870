// SPDX-License-Identifier: Apache-2.0
// ringio/http/websocket_error.hpp — the errors of websockets, in a category of their
// own ("ringio.http.websocket").
#pragma once

#include <system_error>

namespace ringio::http {

/// Why a websocket operation failed, beyond the socket errors (connection_reset,
/// timed_out, operation_canceled, ...) that come back as they are.
enum class websocket_errc {
  closed = 1,        ///< the close handshake has happened (websocket::close_code() says why)
  connection_lost,   ///< the connection ended without a close frame (close code 1006)
  protocol_error,    ///< the peer broke RFC 6455; closed with 1002
  invalid_utf8,      ///< a text message or close reason was not UTF-8; closed with 1007
  message_too_big,   ///< a frame or message over the limits; closed with 1009
  ping_timeout,      ///< no answer to a keep-alive ping within ping_timeout
  busy,              ///< another receive() is in progress
  handshake_failed,  ///< the server did not accept the upgrade (not 101, bad fields)
  bad_accept,        ///< Sec-WebSocket-Accept does not match the key sent
  bad_url,           ///< not a ws:// or wss:// URL
};

/// The category of websocket_errc values.
const std::error_category& websocket_category() noexcept;

/// A websocket_errc as a std::error_code.
inline std::error_code make_error_code(websocket_errc e) noexcept {
  return {static_cast<int>(e), websocket_category()};
}

}  // namespace ringio::http

template <>
struct std::is_error_code_enum<ringio::http::websocket_errc> : std::true_type {};
