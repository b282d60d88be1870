// SPDX-License-Identifier: Apache-2.0
// ringio/http/websocket_deflate_options.hpp — the permessage-deflate extension (RFC
// 7692): whether a websocket offers or accepts it, and how it compresses.
#pragma once

#include <cstddef>

namespace ringio::http {

/// permessage-deflate (RFC 7692) for one side of a websocket. Off by default. A client
/// with `enabled` offers the extension with the parameters below; a server with
/// `enabled` accepts the first acceptable offer (see docs/websocket.md). Once agreed,
/// messages received with RSV1 are inflated (websocket_options::max_message_bytes
/// bounds the inflated size) and messages sent are compressed.
struct websocket_deflate_options {
  /// Offer (client) or accept (server) the extension.
  bool enabled = false;
  /// Messages shorter than this are sent uncompressed (RSV1 clear).
  std::size_t threshold = 64;
  /// zlib compression level, 1 (fastest) to 9 (smallest); 0 sends nothing compressed.
  int level = 6;
  /// This side compresses each message on its own (no context taken over from the
  /// previous message): client side, offers client_no_context_takeover; server side,
  /// answers server_no_context_takeover. Saves the peer nothing, costs ratio.
  bool no_context_takeover = false;
  /// Asks the peer to compress each message on its own: client side, offers
  /// server_no_context_takeover; server side, answers client_no_context_takeover.
  bool peer_no_context_takeover = false;
  /// The LZ77 window this side compresses with, 9 to 15 bits (others are clamped): a
  /// client offers it as client_max_window_bits when under 15; a server answers it as
  /// server_max_window_bits when under 15. A window of 8 bits, which zlib cannot
  /// compress with, forced by the peer: this side sends every message uncompressed.
  int max_window_bits = 15;
  /// The window asked of the peer, 8 to 15 bits: a client offers it as
  /// server_max_window_bits when under 15; a server answers client_max_window_bits
  /// with it when the client allows that.
  int peer_max_window_bits = 15;
};

}  // namespace ringio::http
