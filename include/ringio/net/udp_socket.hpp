// SPDX-License-Identifier: Apache-2.0
// ringio/net/udp_socket.hpp — a UDP socket (IPv4 or IPv6).
#pragma once

#include "ringio/buffer.hpp"
#include "ringio/detail/datagram_ops.hpp"
#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/stream_ops.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/result.hpp"

namespace ringio {

/// A UDP socket. Every operation obeys the awaiting task's stop token
/// (operation_canceled). Closes itself when destroyed.
class udp_socket {
 public:
  udp_socket() noexcept = default;

  /// A socket bound to `at` (port 0: the kernel picks one).
  static result<udp_socket> bind(const socket_address& at);
  /// An unbound socket of the address family of `like`.
  static result<udp_socket> open(const socket_address& like);

  /// Sends one datagram to `to`.
  [[nodiscard]] detail::send_to_op send_to(const_buffer buf, const socket_address& to) noexcept {
    return {fd_.get(), buf, to};
  }
  /// Receives one datagram and its sender.
  [[nodiscard]] detail::recv_from_op recv_from(mutable_buffer buf) noexcept { return {fd_.get(), buf}; }

  /// Fixes the peer (connect(2), synchronous for UDP): then send/recv work.
  result<void> connect(const socket_address& peer) noexcept;
  /// Sends one datagram to the connected peer. Errors: what send(2) reports
  /// (e.g. connection_refused after an ICMP error); operation_canceled on stop.
  [[nodiscard]] detail::send_op send(const_buffer buf) noexcept { return {fd_.get(), buf, 0}; }
  /// Receives one datagram from the connected peer (truncated to buf.size()).
  /// Errors as send.
  [[nodiscard]] detail::recv_op recv(mutable_buffer buf) noexcept { return {fd_.get(), buf, 0, false}; }

  /// The bound address (getsockname).
  [[nodiscard]] result<socket_address> local_address() const;
  /// Whether it holds a descriptor.
  [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
  /// The descriptor (still owned by the socket).
  [[nodiscard]] int native_handle() const noexcept { return fd_.get(); }
  /// Closes the socket now.
  void close() noexcept { fd_.reset(); }

 private:
  explicit udp_socket(detail::fd_handle fd) noexcept : fd_(std::move(fd)) {}
  detail::fd_handle fd_;
};

}  // namespace ringio
