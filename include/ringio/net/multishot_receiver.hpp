// SPDX-License-Identifier: Apache-2.0
// ringio/net/multishot_receiver.hpp — receives from a stream socket with one multishot
// recv that stays armed and lets the kernel pick a buffer from a buffer_pool for each
// arrival: one submission serves the whole connection. On the readiness backends it
// falls back to one recv per call into a buffer taken from the same pool.
#pragma once

#include "ringio/detail/io_operation.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/buffer_pool.hpp"
#include "ringio/net/pooled_receive.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio {
namespace detail {

class multishot_recv_state;
extern const op_vtable recv_next_vtable;

/// The next chunk of a multishot_receiver: a pooled_buffer (empty at end of stream).
class recv_next_op : public io_operation<recv_next_op> {
 public:
  recv_next_op(multishot_recv_state* s, buffer_pool_core* pool, int fd_) noexcept
      : io_operation(&recv_next_vtable, op_kind::event), owner(s), core(pool), fallback(pool, fd_) {
    fd = fd_;  // stream_socket::cancel() finds the waiting next() by its socket
  }
  recv_next_op(const recv_next_op& o) noexcept : io_operation(o), owner(o.owner), core(o.core), fallback(o.fallback) {}

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (direct_owner != nullptr && direct_owner != io_context::current()) {
      // A direct descriptor names a slot of its own loop's table; here the number is
      // another connection or another descriptor. Nothing is touched.
      res = -EXDEV;
      state = op_state::done;
      return false;
    }
    if (!kernel_mode()) {
      if (take_ready()) return false;  // data a cancelled next() put back
      use_fallback = true;
      if (!prepare_fallback()) return false;  // no free buffer: res = -ENOBUFS
      fallback.deadline_ns = deadline_ns;
      fallback.set_stop_token(explicit_stop_token());
      return fallback.await_suspend(h);
    }
    if (take_ready()) return false;
    return wait(io_operation::await_suspend(h));
  }
  result<pooled_buffer> get_result() noexcept;

  multishot_recv_state* owner;
  buffer_pool_core* core;
  pooled_recv_op fallback;
  bool use_fallback = false;
  unsigned buffer_id = 0;      // the kernel's choice (set before completion)
  unsigned buffer_offset = 0;  // where the bytes start in it (incremental buffers)

 private:
  bool kernel_mode() const noexcept;
  bool prepare_fallback() noexcept;
  bool take_ready() noexcept;
  bool wait(bool suspended) noexcept;
};

}  // namespace detail

/// Receives from `socket` (which, like `pool`, must outlive it) through `pool`'s buffers.
/// Each next() yields the bytes of one arrival in a pooled_buffer (one buffer of a
/// bundle; a slice with incremental buffers, see buffer_pool_options); hold it only as
/// long as needed, since the pool is shared by every connection of the loop. When the
/// pool runs dry the receiver pauses (the kernel keeps the data) and resumes as buffers
/// come back. Errors and the end of the stream are sticky.
///
/// To handle several buffers per wake-up (and send them with one gathered send), await
/// next() and then take what else is already queued with next_ready().
class multishot_receiver {
 public:
  /// Receives from `socket` into `pool`'s buffers; the socket must outlive the
  /// receiver. Create it on the loop thread that owns the pool.
  multishot_receiver(stream_socket& socket, buffer_pool& pool);
  ~multishot_receiver();
  multishot_receiver(const multishot_receiver&) = delete;
  multishot_receiver& operator=(const multishot_receiver&) = delete;

  /// The next received bytes; an empty buffer at end of stream. Obeys stop tokens; a
  /// cancelled next() loses no data (it stays queued for the next call).
  [[nodiscard]] detail::recv_next_op next() noexcept;

  /// A buffer already received and queued (the rest of a bundle, or arrivals the
  /// kernel reported before the consumer came back), without waiting or submitting
  /// anything: false, with `out` left empty, when none is queued. It never reports the
  /// end of the stream or an error: next() does. Bytes come in stream order across
  /// next() and next_ready() calls.
  [[nodiscard]] bool next_ready(pooled_buffer& out) noexcept;

 private:
  detail::multishot_recv_state* state_;
  detail::buffer_pool_core* core_;
  int fd_;
  bool direct_;
  io_context* owner_;  // a direct descriptor's loop (null for a normal descriptor)
};

}  // namespace ringio
