// SPDX-License-Identifier: Apache-2.0
// ringio/detail/gather_send_op.hpp — sends a sequence of buffers with sendmsg(2), one
// call per attempt (io_uring: IORING_OP_SENDMSG), the iovec array inside the operation.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <span>

#include "ringio/buffer.hpp"
#include "ringio/detail/io_operation.hpp"

namespace ringio::detail {

extern const op_vtable gather_send_vtable;

/// The most buffers one sendmsg(2) carries. A longer sequence takes several calls
/// (send_all), or its first max_gather_buffers non-empty buffers go (send).
constexpr std::size_t max_gather_buffers = 64;

/// One sendmsg(2) of the buffers (`all` false), or sendmsg(2) until every byte is sent
/// (`all` true), advancing across buffer boundaries after partial sends. Like write(2)
/// it never loses a count: stopped or failed after sending some bytes, the result is
/// that short count; the error is reported only when nothing was sent.
class gather_send_op : public io_operation<gather_send_op> {
 public:
  /// Sends `bufs_` on `fd_`: everything (`all_`) or one sendmsg's worth.
  gather_send_op(int fd_, std::span<const const_buffer> bufs_, bool all_) noexcept
      : io_operation(&gather_send_vtable), bufs(bufs_), all(all_) {
    fd = fd_;
    want = interest::writable;
    counts_bytes = true;
  }
  /// A copy (before the start) leaves the iovecs behind: they are filled at each attempt.
  gather_send_op(const gather_send_op& o) noexcept
      : io_operation(o), bufs(o.bufs), index(o.index), offset(o.offset), all(o.all) {}

  /// Completes at once with 0 when no buffer holds a byte.
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    skip_empty();
    if (finished()) return false;  // nothing to send: 0, without a syscall
    return io_operation::await_suspend(h);
  }
  /// The bytes sent, or the error when none were.
  result<std::size_t> get_result() const noexcept {
    if (res < 0 && done == 0) return unexpected(op_error(*this));
    return done;
  }

  /// Points msg at up to max_gather_buffers iovecs for the unsent rest.
  void fill() noexcept;
  /// Moves past n bytes just sent.
  void advance(std::size_t n) noexcept;
  /// Moves past buffers with nothing left to send.
  void skip_empty() noexcept {
    while (index < bufs.size() && offset >= bufs[index].size()) {
      ++index;
      offset = 0;
    }
  }
  /// Every byte has been sent.
  [[nodiscard]] bool finished() const noexcept { return index >= bufs.size(); }

  std::span<const const_buffer> bufs;  ///< what to send, in order
  std::size_t index = 0;               ///< the first buffer not fully sent
  std::size_t offset = 0;              ///< bytes of bufs[index] already sent
  std::size_t done = 0;                ///< bytes sent so far
  bool all;                            ///< send_all (loop) rather than send (one call)
  msghdr msg{};                        ///< the current sendmsg's header; points at iov
  iovec iov[max_gather_buffers];       ///< the current sendmsg's pieces
};

}  // namespace ringio::detail
