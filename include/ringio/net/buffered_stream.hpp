// SPDX-License-Identifier: Apache-2.0
// ringio/net/buffered_stream.hpp — reads of whole messages (lines, delimited records,
// counted bodies) from a stream socket through an input buffer of fixed capacity.
#pragma once

#include <cstddef>
#include <limits>
#include <string_view>

#include "ringio/buffer.hpp"
#include "ringio/detail/buffered_read_ops.hpp"
#include "ringio/detail/read_buffer.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio {

/// An input buffer in front of a stream_socket that it does not own. Not owning keeps
/// the socket whole: it is written to, shut down, cancelled and closed through its own
/// API, and a protocol can stop using the buffered_stream half-way (take buffered(),
/// then read the socket directly) without handing the socket back. The socket must
/// outlive the buffered_stream and every read in flight.
///
/// The buffer is allocated once, in the constructor; reads allocate nothing. One read
/// at a time: a read must complete before the next starts, and neither consume() nor a
/// move may happen while a read is in flight. A moved-from buffered_stream may only be
/// destroyed or assigned to. Reads that the buffered bytes already answer
/// complete without a syscall. Writes go to socket() directly.
///
/// Every read obeys the awaiting task's stop token (and .with_stop(t), with_timeout):
/// a stop while it waits completes it with std::errc::operation_canceled, and no byte
/// is lost: what arrived before the stop stays buffered for the next read (or, for the
/// reads into a caller's buffer, is counted in a short result).
class buffered_stream {
 public:
  /// The capacity a buffered_stream gets when none is given.
  static constexpr std::size_t default_capacity = 4096;
  /// As `max`: the message may fill the whole buffer.
  static constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();

  /// Buffers reads of `socket` in `capacity` bytes (at least 1), allocated here.
  /// Throws std::bad_alloc if the allocation fails.
  explicit buffered_stream(stream_socket& socket, std::size_t capacity = default_capacity);

  /// Takes over the buffer and its bytes (no read may be in flight on `other`).
  buffered_stream(buffered_stream&& other) noexcept = default;
  /// Takes over the buffer and its bytes (no read may be in flight on either).
  buffered_stream& operator=(buffered_stream&& other) noexcept = default;

  /// Reads up to and including the first occurrence of `delim`. The result views the
  /// message inside the buffer and stays valid until the next read. Errors:
  /// errc::message_too_long when min(max, capacity()) bytes are buffered without the
  /// delimiter ending within them (the bytes stay buffered); errc::end_of_stream when
  /// the peer closed its side first, in which case an unterminated rest stays in
  /// buffered() (a returned message always ends with `delim`);
  /// std::errc::invalid_argument for an empty `delim`; any recv(2) error. `delim` must
  /// stay valid until the read completes. Cancellation: operation_canceled, nothing lost.
  [[nodiscard]] detail::read_message_op read_until(std::string_view delim, std::size_t max = no_limit) noexcept {
    return on_socket(detail::read_message_op{socket_->native_handle(), buffer_, delim, clamp(max), false, false});
  }

  /// Reads one line ending in "\n" and returns it without the "\n" and without a "\r"
  /// just before it. `max` counts the raw bytes, line end included. Errors and
  /// cancellation as for read_until("\n", max); the view is valid until the next read.
  [[nodiscard]] detail::read_message_op read_line(std::size_t max = no_limit) noexcept {
    return on_socket(detail::read_message_op{socket_->native_handle(), buffer_, "\n", clamp(max), false, true});
  }

  /// Reads exactly n bytes into the buffer and returns a view of them, valid until the
  /// next read. Errors: errc::message_too_long when n > capacity() (nothing is read);
  /// errc::end_of_stream when the peer closed first (what arrived stays in buffered());
  /// any recv(2) error. Cancellation: operation_canceled, nothing lost.
  [[nodiscard]] detail::read_message_op read_exact(std::size_t n) noexcept {
    return on_socket(detail::read_message_op{socket_->native_handle(), buffer_, {}, n, true, false});
  }

  /// Fills `dst`: first from the buffered bytes, then with receives straight into
  /// `dst` (never reading past it). The result is dst.size(), or a shorter count when
  /// the peer closed or the read stopped early (a stop, cancel(), a timeout or an
  /// error) after some bytes: those bytes are at the start of `dst`. The error is
  /// reported only when nothing arrived: errc::end_of_stream if the peer had closed,
  /// operation_canceled if stopped, else the recv(2) error. An error that a short count
  /// hid (connection_reset, which the kernel reports once) is the next read's error.
  [[nodiscard]] detail::read_into_op read_exact(mutable_buffer dst) noexcept {
    return on_socket(detail::read_into_op{socket_->native_handle(), buffer_, dst, true});
  }

  /// Like stream_socket::recv: buffered bytes first (as many as fit in `dst`, no
  /// syscall), else one recv(2) straight into `dst`. 0 means the peer closed its side.
  /// Errors: those of recv(2). Cancellation: operation_canceled when nothing arrived.
  [[nodiscard]] detail::read_into_op read_some(mutable_buffer dst) noexcept {
    return on_socket(detail::read_into_op{socket_->native_handle(), buffer_, dst, false});
  }

  /// The bytes received beyond the last message returned, not yet consumed. A protocol
  /// that switches to raw reads of socket() handles these first.
  [[nodiscard]] std::string_view buffered() const noexcept { return buffer_.unread(); }
  /// Discards the first n buffered bytes (all of them if n is larger).
  void consume(std::size_t n) noexcept { buffer_.consume(n); }
  /// True once a read has seen the peer close its side.
  [[nodiscard]] bool at_end() const noexcept { return buffer_.ended; }
  /// The buffer's size: the longest message read_until and read_exact(n) can return.
  [[nodiscard]] std::size_t capacity() const noexcept { return buffer_.capacity(); }
  /// The socket read from; write to it directly.
  [[nodiscard]] stream_socket& socket() const noexcept { return *socket_; }

 private:
  // A direct descriptor that could not be installed here (another loop's): the read
  // fails with cross_device_link when awaited.
  template <class Op>
  Op on_socket(Op op) const noexcept {
    op.direct_owner = socket_->direct_owner();
    return op;
  }
  std::size_t clamp(std::size_t max) const noexcept { return max < capacity() ? max : capacity(); }

  stream_socket* socket_;
  detail::read_buffer buffer_;
};

}  // namespace ringio
