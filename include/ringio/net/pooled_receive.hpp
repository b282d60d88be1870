// SPDX-License-Identifier: Apache-2.0
// ringio/net/pooled_receive.hpp — one receive into a buffer of a buffer_pool that is
// taken only when data is there: a connection waiting for its next message holds no
// buffer of its own (the idle keep-alive connections of a server).
#pragma once

#include "ringio/detail/io_operation.hpp"
#include "ringio/net/buffer_pool.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio {
namespace detail {

extern const op_vtable pooled_recv_vtable;

/// io_uring with a buffer ring: a recv with IOSQE_BUFFER_SELECT that waits for
/// readiness first, so the kernel picks the buffer when data arrives. io_uring without
/// one: the buffer is taken at the start. Readiness backends: taken when readable.
class pooled_recv_op : public io_operation<pooled_recv_op> {
 public:
  pooled_recv_op(buffer_pool_core* c, int fd_) noexcept : io_operation(&pooled_recv_vtable), core(c) {
    fd = fd_;
    want = interest::readable;
    counts_bytes = true;
  }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (!take_buffer_for_submission()) return false;  // none free: res = -ENOBUFS
    return io_operation::await_suspend(h);
  }
  result<pooled_buffer> get_result() noexcept;

  buffer_pool_core* core;
  int id = -1;  ///< the buffer holding the data (-1: none)

 private:
  bool take_buffer_for_submission() noexcept;
};

}  // namespace detail

/// Receives what `socket` has next into a buffer of `pool` (both must outlive the
/// operation; create both on the loop's thread). The buffer is chosen only when data
/// has arrived, so a waiting receive holds none. Result: the bytes in a pooled_buffer
/// (release it soon: the pool is shared), an empty one at end of stream, or the error;
/// no_buffer_space when no buffer of the pool was free (the data then stays in the
/// socket: receive it another way or try again). Cancellation follows the rules of
/// every receive: a stop before data arrived completes with operation_canceled; data
/// that won the race against the stop is delivered.
[[nodiscard]] detail::pooled_recv_op receive_pooled(stream_socket& socket, buffer_pool& pool) noexcept;

}  // namespace ringio
