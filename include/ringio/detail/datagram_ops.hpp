// SPDX-License-Identifier: Apache-2.0
// ringio/detail/datagram_ops.hpp — sendmsg/recvmsg with an address: the operations of
// unconnected datagram sockets.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>

#include "ringio/buffer.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/net/socket_address.hpp"

namespace ringio {

/// What recv_from delivers.
struct datagram {
  std::size_t size = 0;    ///< bytes stored in the buffer
  socket_address from;     ///< the sender
  bool truncated = false;  ///< the datagram was larger than the buffer (MSG_TRUNC)
};

namespace detail {

extern const op_vtable send_to_vtable;
extern const op_vtable recv_from_vtable;

/// sendmsg(2) of one datagram to `to`.
class send_to_op : public io_operation<send_to_op> {
 public:
  send_to_op(int fd_, const_buffer b, const socket_address& to_) noexcept
      : io_operation(&send_to_vtable), buf(b), to(to_) {
    fd = fd_;
    want = interest::writable;
    counts_bytes = true;
  }
  send_to_op(const send_to_op& o) noexcept : io_operation(o), buf(o.buf), to(o.to) {}
  result<std::size_t> get_result() const noexcept { return size_result(*this); }

  const_buffer buf;
  socket_address to;
  // Filled when the operation starts (they point into this object).
  iovec iov{};
  msghdr msg{};
};

/// recvmsg(2) of one datagram and its sender.
class recv_from_op : public io_operation<recv_from_op> {
 public:
  recv_from_op(int fd_, mutable_buffer b) noexcept : io_operation(&recv_from_vtable), buf(b) {
    fd = fd_;
    want = interest::readable;
    counts_bytes = true;
  }
  recv_from_op(const recv_from_op& o) noexcept : io_operation(o), buf(o.buf) {}
  result<datagram> get_result() noexcept;

  mutable_buffer buf;
  socket_address from;
  iovec iov{};
  msghdr msg{};
};

}  // namespace detail
}  // namespace ringio
