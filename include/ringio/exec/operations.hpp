// SPDX-License-Identifier: Apache-2.0
// ringio/exec/operations.hpp — a sender for every ringio operation. Each is the
// operation that awaiting would run (see io_sender for how it completes); the buffers
// and sockets must outlive the operation, as with co_await.
#pragma once

#include <chrono>
#include <cstdint>

#include "ringio/buffer.hpp"
#include "ringio/channel.hpp"
#include "ringio/exec/from_task.hpp"
#include "ringio/exec/io_sender.hpp"
#include "ringio/fs/file.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/net/udp_socket.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/yield.hpp"

namespace ringio::exec {

/// Accepts one connection: set_value(stream_socket); errors of `accept(2)`.
[[nodiscard]] inline io_sender<ringio::detail::accept_op> accept(stream_listener& l) noexcept {
  return as_sender(l.accept());
}
/// Connects to `to`: set_value(stream_socket); connection_refused, ...
[[nodiscard]] inline io_sender<ringio::detail::connect_op> connect_to(const socket_address& to) noexcept {
  return as_sender(stream_socket::connect(to));
}
/// Connects to `to` from the local address `from` (see stream_socket::connect).
[[nodiscard]] inline io_sender<ringio::detail::connect_op> connect_to(const socket_address& to,
                                                                      const socket_address& from) noexcept {
  return as_sender(stream_socket::connect(to, from));
}
/// One `recv(2)`: set_value(bytes), 0 at end of stream.
[[nodiscard]] inline io_sender<ringio::detail::recv_op> recv(stream_socket& s, mutable_buffer b,
                                                             int flags = 0) noexcept {
  return as_sender(s.recv(b, flags));
}
/// Receives until `b` is full: set_value(bytes), short only at end of stream or when it
/// stopped after some bytes arrived (then the count, not set_stopped: nothing is lost).
[[nodiscard]] inline io_sender<ringio::detail::recv_exact_op> recv_exact(stream_socket& s, mutable_buffer b) noexcept {
  return as_sender(s.recv_exact(b));
}
/// One `send(2)`: set_value(bytes sent), possibly fewer than given.
[[nodiscard]] inline io_sender<ringio::detail::send_op> send(stream_socket& s, const_buffer b, int flags = 0) noexcept {
  return as_sender(s.send(b, flags));
}
/// Sends all of `b`: set_value(b.size()), or the short count sent before a stop or error.
[[nodiscard]] inline io_sender<ringio::detail::send_all_op> send_all(stream_socket& s, const_buffer b) noexcept {
  return as_sender(s.send_all(b));
}
/// `shutdown(2)`: set_value().
[[nodiscard]] inline io_sender<ringio::detail::shutdown_op> shutdown(stream_socket& s, int how = SHUT_WR) noexcept {
  return as_sender(s.shutdown(how));
}
/// Closes the socket through the ring (it is empty afterwards): set_value(). Not cancellable.
[[nodiscard]] inline io_sender<ringio::detail::close_op> close(stream_socket& s) noexcept {
  return as_sender(s.close());
}
/// One datagram (`recvmsg(2)`): set_value(datagram) with its size and sender's address.
[[nodiscard]] inline io_sender<ringio::detail::recv_from_op> recv_from(udp_socket& s, mutable_buffer b) noexcept {
  return as_sender(s.recv_from(b));
}
/// Sends one datagram to `to` (`sendmsg(2)`): set_value(bytes).
[[nodiscard]] inline io_sender<ringio::detail::send_to_op> send_to(udp_socket& s, const_buffer b,
                                                                   const socket_address& to) noexcept {
  return as_sender(s.send_to(b, to));
}
/// Reads up to `b.size()` bytes at `offset`: set_value(bytes), 0 at end of file.
[[nodiscard]] inline io_sender<ringio::detail::read_at_op> read_at(file& f, mutable_buffer b,
                                                                   std::uint64_t offset) noexcept {
  return as_sender(f.read_at(b, offset));
}
/// Writes `b` at `offset`: set_value(bytes written).
[[nodiscard]] inline io_sender<ringio::detail::write_at_op> write_at(file& f, const_buffer b,
                                                                     std::uint64_t offset) noexcept {
  return as_sender(f.write_at(b, offset));
}
/// Completes with set_value() after `d`; set_stopped() when stopped first.
[[nodiscard]] inline io_sender<ringio::detail::sleep_op> sleep_for(std::chrono::nanoseconds d) noexcept {
  return as_sender(ringio::sleep_for(d));
}
/// Completes with set_value() at `t`; set_stopped() when stopped first.
[[nodiscard]] inline io_sender<ringio::detail::sleep_op> sleep_until(std::chrono::steady_clock::time_point t) noexcept {
  return as_sender(ringio::sleep_until(t));
}
/// A round trip through the backend (IORING_OP_NOP on io_uring): set_value().
[[nodiscard]] inline io_sender<ringio::detail::nop_op> nop() noexcept { return as_sender(ringio::nop()); }
/// The next value of `ch` (its one receiving side): set_value(result<T>), the value or
/// operation_canceled when the receiver's stop token was requested while it waited.
/// Runs channel::receive as a task (a frame from the thread's frame pool).
template <class T>
[[nodiscard]] task_sender<result<T>> receive(channel<T>& ch) {
  return from_task(ch.receive());
}

}  // namespace ringio::exec
