// SPDX-License-Identifier: Apache-2.0
// ringio/http/upgraded_connection.hpp — what an upgrade handler (response::upgrade)
// gets once the server has sent its 101 response: the connection's byte stream, the
// bytes the client sent after its request, and the server's drain signal.
#pragma once

#include <stop_token>
#include <string_view>

#include "ringio/net/stream_socket.hpp"

namespace ringio::tls {
class stream;
}

namespace ringio::http {

/// A connection handed over to another protocol after "101 Switching Protocols". The
/// stream belongs to the server: it stays open while the upgrade handler runs and is
/// closed when the handler returns. Exactly one of `socket` and `secure` is set.
struct upgraded_connection {
  /// The plain connection (HTTP), or nullptr.
  stream_socket* socket = nullptr;
  /// The TLS stream (HTTPS), or nullptr.
  tls::stream* secure = nullptr;
  /// Bytes the client sent after the upgrade request, already read from the stream:
  /// they come before anything received later. Valid while the handler runs.
  std::string_view received;
  /// Stopped when the server drains (server::drain, or serve() stopping): the handler
  /// should end its session soon.
  std::stop_token drain;
};

}  // namespace ringio::http
