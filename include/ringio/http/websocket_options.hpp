// SPDX-License-Identifier: Apache-2.0
// ringio/http/websocket_options.hpp — the limits and timeouts of a websocket.
#pragma once

#include <chrono>
#include <cstddef>

#include "ringio/http/websocket_deflate_options.hpp"

namespace ringio::http {

/// Limits and timeouts of a websocket, server or client side. Every field has a default.
struct websocket_options {
  /// The longest frame payload received; a longer frame closes the connection with
  /// 1009 (message too big).
  std::size_t max_frame_bytes = 1024 * 1024;
  /// The longest message received (all its frames together); longer: 1009.
  std::size_t max_message_bytes = 4 * 1024 * 1024;
  /// Messages sent longer than this go out as several frames of at most this many
  /// payload bytes (also the most the send buffer holds). Zero: one frame each.
  std::size_t max_send_frame_bytes = 0;
  /// Keep-alive: when nothing has arrived for this long, a ping is sent, by a waiting
  /// receive() or else by the websocket's keep-alive task (docs/websocket.md). Zero:
  /// no keep-alive pings.
  std::chrono::milliseconds ping_interval{0};
  /// Keep-alive: a peer that sends nothing for this long after a keep-alive ping is
  /// given up (receive() and sends fail with websocket_errc::ping_timeout).
  std::chrono::milliseconds ping_timeout{10'000};
  /// Each frame sent must be taken by the peer within this (timed_out; the websocket
  /// can send nothing more).
  std::chrono::milliseconds send_timeout{30'000};
  /// The close handshake (the peer's close frame, then the end of the connection) must
  /// be over within this.
  std::chrono::milliseconds close_timeout{5'000};
  /// permessage-deflate (RFC 7692): offered by a client, accepted by a server, when
  /// enabled. max_message_bytes bounds a compressed message's inflated size.
  websocket_deflate_options deflate{};
};

}  // namespace ringio::http
