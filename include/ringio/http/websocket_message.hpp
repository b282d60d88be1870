// SPDX-License-Identifier: Apache-2.0
// ringio/http/websocket_message.hpp — one received WebSocket message.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringio::http {

/// A whole message as websocket::receive() returns it. `data` points into the
/// websocket's receive buffers: valid until the next receive() or close().
struct websocket_message {
  /// The two kinds of data message.
  enum class kind : std::uint8_t {
    text,    ///< UTF-8 text (validated)
    binary,  ///< bytes
  };
  /// Text or binary.
  kind type = kind::text;
  /// The payload of every frame of the message, joined and unmasked.
  std::string_view data;
  /// Whether it is a text message.
  [[nodiscard]] bool is_text() const noexcept { return type == kind::text; }
};

}  // namespace ringio::http
