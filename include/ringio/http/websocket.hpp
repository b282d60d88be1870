// SPDX-License-Identifier: Apache-2.0
// ringio/http/websocket.hpp — a WebSocket connection (RFC 6455), server or client side:
// whole messages in (text validated as UTF-8, fragments joined), messages and pings
// out, pings answered and the close handshake done by itself. Made by
// accept_websocket() (server) or client::connect_websocket() (client).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ringio/http/response_stream.hpp"
#include "ringio/http/upgraded_connection.hpp"
#include "ringio/http/websocket_error.hpp"
#include "ringio/http/websocket_message.hpp"
#include "ringio/http/websocket_options.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

/// @cond INTERNAL
namespace detail {
struct websocket_state;
struct deflate_agreement;
}  // namespace detail
/// @endcond

/// One WebSocket connection (see the top of this file). Use it from tasks of one loop.
///
/// One receive() may run at a time; sends (send_text, send_binary, ping, close) may run
/// while it waits, from other tasks: frames go out whole, one after the other, pongs
/// and close replies of the receiving side included. receive() answers pings, records
/// pongs, and on the peer's close frame replies and ends the connection. Keep-alive
/// pings (websocket_options::ping_interval) go out whether a receive() waits or not.
/// With permessage-deflate agreed (websocket_options::deflate), messages are compressed
/// and inflated on the way. A protocol violation by the peer is
/// answered with a close frame carrying 1002, 1007 or 1009 and fails the receive.
///
/// Cancellation: every operation obeys the awaiting task's stop token
/// (operation_canceled). A stopped receive() loses nothing: a partly received frame or
/// message stays buffered for the next one. A send stopped part-way leaves a frame cut
/// in the middle: the websocket then sends nothing more (broken_pipe), as after a send
/// error or send_timeout. The server's drain cuts a send in progress the same way
/// (operation_canceled).
class websocket {
 public:
  /// Close codes of RFC 6455 section 7.4.1 (others: 3000-4999 for applications).
  enum close_code : std::uint16_t {
    normal_closure = 1000,    ///< the purpose of the connection is fulfilled
    going_away = 1001,        ///< a server going down or a browser leaving the page
    protocol_error = 1002,    ///< RFC 6455 broken
    unsupported_data = 1003,  ///< a kind of message the endpoint cannot take
    no_status = 1005,         ///< reported only: the close frame carried no code
    abnormal_closure = 1006,  ///< reported only: the connection ended without a close frame
    invalid_payload = 1007,   ///< text that is not UTF-8
    policy_violation = 1008,  ///< a message against the endpoint's policy
    message_too_big = 1009,   ///< over the size limits
    internal_error = 1011,    ///< the endpoint failed
  };

  /// An empty websocket (valid() is false).
  websocket() noexcept;
  /// Moves the connection while no operation is in flight; `other` becomes empty.
  websocket(websocket&& other) noexcept;
  /// Moves the connection while no operation is in flight.
  websocket& operator=(websocket&& other) noexcept;
  /// Closes the connection if this side owns it (client side) without a close
  /// handshake: close() first for a clean end. The keep-alive task is stopped (on the
  /// client side it holds the connection until it has ended, on the loop).
  ~websocket();

  /// The server side over `conn` (after a 101 response; accept_websocket does it),
  /// which must outlive the websocket. `subprotocol`: the one the 101 response chose.
  [[nodiscard]] static websocket server(upgraded_connection& conn, websocket_options opts = {},
                                        std::string subprotocol = {});
  /// @cond INTERNAL
  /// The server side with permessage-deflate as agreed by accept_websocket.
  [[nodiscard]] static websocket server(upgraded_connection& conn, websocket_options opts, std::string subprotocol,
                                        const detail::deflate_agreement& deflate);
  /// The client side over a connection of http::client, handshake done.
  [[nodiscard]] static websocket client(detail::connection_ptr conn, std::string_view received, websocket_options opts,
                                        std::string subprotocol, const detail::deflate_agreement& deflate);
  /// Starts the keep-alive task on the current io_context (with ping_interval set):
  /// pings go out and a silent peer is given up while no receive() waits.
  void start_keep_alive();
  /// Stops the keep-alive task and the send watchdog and waits until both have ended
  /// (whatever the caller's stop); later sends carry their own deadlines.
  task<void> stop_keep_alive();
  /// @endcond

  /// Receives the next whole message (its data valid until the next receive() or
  /// close()). Errors: websocket_errc::closed once the close handshake is done
  /// (close_code() and close_reason() tell the peer's code and reason, and every later
  /// call fails the same way), connection_lost, protocol_error, invalid_utf8,
  /// message_too_big, ping_timeout, busy, socket errors. Cancellation: see the class.
  /// A compressed message is inflated within websocket_options::max_message_bytes.
  [[nodiscard]] task<result<websocket_message>> receive();
  /// Sends a text message: one frame, or frames of websocket_options::max_send_frame_bytes,
  /// all before any other frame. Errors: std::errc::invalid_argument when `text`
  /// is not UTF-8 (nothing sent), websocket_errc::closed after a close frame was sent,
  /// broken_pipe after a failed send, timed_out (send_timeout), ping_timeout once
  /// keep-alive gave the peer up, socket errors. Compressed when permessage-deflate was
  /// agreed and it is at least websocket_deflate_options::threshold bytes long.
  [[nodiscard]] task<result<void>> send_text(std::string_view text);
  /// Sends a binary message (framed as send_text). Errors as send_text.
  [[nodiscard]] task<result<void>> send_binary(std::string_view data);
  /// Sends a ping with `payload` (at most 125 bytes, else invalid_argument); the
  /// peer's pong is taken by receive(). Errors as send_text.
  [[nodiscard]] task<result<void>> ping(std::string_view payload = {});
  /// Starts the close handshake with `code` (1000-1003, 1007-1014 or 3000-4999) and
  /// `reason` (UTF-8, at most 123 bytes; else invalid_argument). While a receive() is in
  /// flight it sends the close frame and waits (at most close_timeout) for that receive
  /// to see the peer's answer; if it still waits then, the connection is ended under it
  /// (it fails with connection_lost). Else it
  /// waits for the peer's close frame (dropping messages that arrive first) and the end
  /// of the connection, for at most close_timeout. Errors: websocket_errc::closed when
  /// a close frame was sent before, send errors.
  [[nodiscard]] task<result<void>> close(std::uint16_t code = normal_closure, std::string_view reason = {});

  /// Whether it holds a connection.
  [[nodiscard]] bool valid() const noexcept { return s_ != nullptr; }
  /// Whether messages may still be sent and received: no close frame sent or received,
  /// no failure.
  [[nodiscard]] bool is_open() const noexcept;
  /// The close code the peer sent (no_status when its close frame had none), the code
  /// this side closed with after a protocol violation, abnormal_closure when the
  /// connection ended without a close frame; 0 while none.
  [[nodiscard]] std::uint16_t close_code() const noexcept;
  /// The reason that came with the peer's close code (may be empty).
  [[nodiscard]] std::string_view close_reason() const noexcept;
  /// Whether permessage-deflate (RFC 7692) was agreed in the handshake.
  [[nodiscard]] bool compressed() const noexcept;
  /// The subprotocol agreed in the handshake, or "".
  [[nodiscard]] std::string_view subprotocol() const noexcept;
  /// The options (valid() must be true).
  [[nodiscard]] const websocket_options& options() const noexcept;

 private:
  explicit websocket(std::shared_ptr<detail::websocket_state> s) noexcept;
  void release() noexcept;
  std::shared_ptr<detail::websocket_state> s_;  // shared with the keep-alive task
};

}  // namespace ringio::http
