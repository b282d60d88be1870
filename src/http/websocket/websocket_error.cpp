// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/websocket_error.hpp"

#include <string>

namespace ringio::http {

namespace {

class websocket_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "ringio.http.websocket"; }
  std::string message(int value) const override {
    switch (static_cast<websocket_errc>(value)) {
      case websocket_errc::closed:
        return "websocket closed";
      case websocket_errc::connection_lost:
        return "websocket connection ended without a close frame";
      case websocket_errc::protocol_error:
        return "websocket protocol error";
      case websocket_errc::invalid_utf8:
        return "websocket text is not UTF-8";
      case websocket_errc::message_too_big:
        return "websocket message too big";
      case websocket_errc::ping_timeout:
        return "websocket peer did not answer a ping";
      case websocket_errc::busy:
        return "websocket receive already in progress";
      case websocket_errc::handshake_failed:
        return "websocket handshake refused";
      case websocket_errc::bad_accept:
        return "websocket Sec-WebSocket-Accept mismatch";
      case websocket_errc::bad_url:
        return "not a ws:// or wss:// URL";
    }
    return "unknown websocket error";
  }
};

}  // namespace

const std::error_category& websocket_category() noexcept {
  static const websocket_category_impl category;
  return category;
}

}  // namespace ringio::http
