// SPDX-License-Identifier: Apache-2.0
// ringio/detail/buffered_read_ops.hpp — the operations of a buffered_stream: a read of
// one message (up to a delimiter, or a byte count) into its buffer, and a read into a
// caller's buffer. Each answers from the buffered bytes when it can, without a syscall;
// otherwise it receives until the message is complete, one recv per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ringio/buffer.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/read_buffer.hpp"

namespace ringio::detail {

extern const op_vtable read_message_vtable;
extern const op_vtable read_into_vtable;

/// Reads one message into a read_buffer: up to and including a delimiter, or exactly
/// `limit` bytes. Received bytes stay in the buffer whatever the outcome; only a
/// returned message is consumed.
class read_message_op : public io_operation<read_message_op> {
 public:
  /// How the read ended: still pending, a message, or why there is none.
  enum class outcome : std::uint8_t { pending, found, too_long, ended, invalid };

  /// A delimited message (delim not empty) of at most `limit` bytes, or, with an empty
  /// `delim` and `counted`, exactly `limit` bytes.
  read_message_op(int fd_, read_buffer& b, std::string_view delim_, std::size_t limit_, bool counted_,
                  bool strip_line_end_) noexcept
      : io_operation(&read_message_vtable),
        buffer(&b),
        delim(delim_),
        limit(limit_),
        counted(counted_),
        strip_line_end(strip_line_end_) {
    fd = fd_;
    want = interest::readable;
    counts_bytes = true;
  }

  /// Completes at once when the buffered bytes decide the outcome; else receives.
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (settle()) return false;  // answered from the buffer: no syscall
    buffer->compact();
    return io_operation::await_suspend(h);
  }
  /// The message, or message_too_long, end_of_stream, invalid_argument, the recv error.
  result<std::string_view> get_result() const noexcept;

  /// Decides the outcome from the buffered bytes; false while more are needed.
  bool settle() noexcept;
  /// settle() when the buffer holds no whole message: the end of the stream or a
  /// deferred error decide it; false when a receive may bring more.
  bool need_more() noexcept;

  read_buffer* buffer;             ///< where the bytes are received and kept
  std::string_view delim;          ///< the end of a message (delimited reads)
  std::size_t limit;               ///< the longest message, or the count (counted reads)
  std::size_t scanned = 0;         ///< unread bytes already searched for the delimiter
  bool counted;                    ///< exactly `limit` bytes instead of a delimiter
  bool strip_line_end;             ///< read_line: drop "\n" and a "\r" before it
  outcome out = outcome::pending;  ///< decided by settle()
  std::string_view message;        ///< the message when out is found
};

/// Reads into a caller's buffer: first what the read_buffer holds, then straight from
/// the socket. `exact`: until dst is full (short only when the stream ends or the
/// read stops early); otherwise: whatever the first source has, like recv(2).
class read_into_op : public io_operation<read_into_op> {
 public:
  /// Reads from `b`, then from `fd_`, into `dst_`.
  read_into_op(int fd_, read_buffer& b, mutable_buffer dst_, bool exact_) noexcept
      : io_operation(&read_into_vtable), buffer(&b), dst(dst_), exact(exact_) {
    fd = fd_;
    want = interest::readable;
    counts_bytes = true;
  }

  /// Copies the buffered bytes first; completes at once when they are enough.
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    done = buffer->take(dst);
    if (done == dst.size() || (!exact && done != 0) || buffer->ended) return false;
    if (*buffer->deferred_error != 0) {
      if (done == 0) res = buffer->take_error();  // else: a short count now, the error next
      return false;
    }
    return io_operation::await_suspend(h);
  }
  /// The bytes stored in dst, or (none stored) end_of_stream or the recv error.
  result<std::size_t> get_result() const noexcept;

  read_buffer* buffer;   ///< buffered bytes are taken from here first
  mutable_buffer dst;    ///< the caller's buffer
  std::size_t done = 0;  ///< bytes stored in dst so far
  bool exact;            ///< fill dst (read_exact) or stop after one source (read_some)
};

}  // namespace ringio::detail
