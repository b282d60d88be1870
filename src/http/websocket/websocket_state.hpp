// SPDX-License-Identifier: Apache-2.0
// websocket_state — everything a websocket holds: its byte stream (plain or TLS,
// borrowed from the server's connection or owning a client connection), the receive
// buffer frames are parsed and unmasked in, the buffer joined fragments go to, the
// send buffer frames are built in, and where the close handshake stands.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "frame_header.hpp"
#include "permessage_deflate.hpp"
#include "ringio/http/response_stream.hpp"
#include "ringio/http/websocket_options.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/sync/mutex.hpp"
#include "ringio/tls/stream.hpp"
#include "utf8_validator.hpp"

namespace ringio::http::detail {

struct websocket_state : std::enable_shared_from_this<websocket_state> {
  // The stream: exactly one of socket and secure; `owned` holds it on the client side.
  stream_socket* socket = nullptr;
  tls::stream* secure = nullptr;
  connection_ptr owned;
  bool client = false;
  websocket_options opts;
  std::string subprotocol;
  std::unique_ptr<deflate_codec> deflate;  // permessage-deflate agreed: its zlib streams

  // Receiving: unparsed bytes are in[begin, end).
  std::unique_ptr<unsigned char[]> in;
  std::size_t capacity = 0;
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string message;  // a fragmented message being joined
  ws_opcode message_op = ws_opcode::continuation;
  bool in_message = false;
  bool message_delivered = false;   // `message` was returned: cleared by the next receive
  bool message_compressed = false;  // the message being received is inflated by `deflate`
  utf8_validator utf8;
  bool receiving = false;
  std::chrono::steady_clock::time_point last_input;
  bool ping_outstanding = false;
  std::chrono::steady_clock::time_point ping_sent;
  // Keep-alive while no receive waits: a task of the loop, stopped by keeper_stop.
  std::stop_source keeper_stop;
  bool keeper_running = false;
  bool keepalive_expired = false;  // the keeper gave the peer up (ping_timeout)

  // Sending: one frame at a time; a server's header in head, its payload sent where it
  // lies (plain sockets); a client's frames, and any over TLS, built in out.
  mutex write_lock;
  unsigned char head[max_frame_header] = {};
  std::unique_ptr<unsigned char[]> out;
  std::size_t out_capacity = 0;
  bool write_failed = false;
  bool close_sent = false;
  // close() while a receive waits: that receive gives up at this time ({}: none).
  std::chrono::steady_clock::time_point close_deadline{};
  // send_timeout on a plain socket: a watchdog task (started by a send when none runs,
  // ending when it finds no send in flight) shuts the socket's sending side down when
  // the frame begun at send_began ({}: none in flight) is still going after send_timeout.
  std::chrono::steady_clock::time_point send_began{};
  bool watchdog_running = false;
  bool send_expired = false;         // the watchdog ended a send: it failed with timed_out
  unsigned char mask_pool[64] = {};  // random mask keys (client), refilled when used up
  std::size_t mask_used = sizeof(mask_pool);

  // Closing.
  bool close_received = false;
  bool failed = false;  // a protocol violation, a lost connection
  std::uint16_t close_code = 0;
  std::string close_reason;
};

}  // namespace ringio::http::detail
