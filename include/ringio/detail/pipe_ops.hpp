// SPDX-License-Identifier: Apache-2.0
// ringio/detail/pipe_ops.hpp — reads and writes on a pipe (or any descriptor read at
// its current position): IORING_OP_READ/WRITE at offset -1 on io_uring; preadv2 /
// pwritev2 with RWF_NOWAIT on the readiness backends, so the descriptor itself may
// stay blocking (the child at the other end expects that).
#pragma once

#include <cstddef>

#include "ringio/buffer.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/stream_ops.hpp"
#include "ringio/result.hpp"

namespace ringio::detail {

extern const op_vtable pipe_read_vtable;
extern const op_vtable pipe_write_vtable;

/// One read: up to buf.size() bytes; 0 when every writer has closed its end.
class pipe_read_op : public io_operation<pipe_read_op> {
 public:
  pipe_read_op(int fd_, mutable_buffer b) noexcept : io_operation(&pipe_read_vtable), buf(b.first(max_io_size)) {
    fd = fd_;
    want = interest::readable;
  }
  result<std::size_t> get_result() const noexcept { return size_result(*this); }
  mutable_buffer buf;
};

/// One write; may write fewer bytes than given. broken_pipe when the reader is gone.
class pipe_write_op : public io_operation<pipe_write_op> {
 public:
  pipe_write_op(int fd_, const_buffer b) noexcept : io_operation(&pipe_write_vtable), buf(b.first(max_io_size)) {
    fd = fd_;
    want = interest::writable;
  }
  result<std::size_t> get_result() const noexcept { return size_result(*this); }
  const_buffer buf;
};

}  // namespace ringio::detail
