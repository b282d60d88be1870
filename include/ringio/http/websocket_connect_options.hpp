// SPDX-License-Identifier: Apache-2.0
// ringio/http/websocket_connect_options.hpp — what client::connect_websocket() sends
// in the opening handshake.
#pragma once

#include <string>
#include <vector>

#include "ringio/http/websocket_options.hpp"

namespace ringio::http {

/// The client side of a WebSocket opening handshake.
struct websocket_connect_options {
  /// Subprotocols offered (Sec-WebSocket-Protocol), most preferred first; the server
  /// must choose one of them or none.
  std::vector<std::string> subprotocols{};
  /// The Origin field to send; empty: none.
  std::string origin{};
  /// The websocket's limits and timeouts.
  websocket_options options{};
};

}  // namespace ringio::http
