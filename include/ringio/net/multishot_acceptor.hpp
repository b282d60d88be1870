// SPDX-License-Identifier: Apache-2.0
// ringio/net/multishot_acceptor.hpp — accepts connections with one multishot
// IORING_OP_ACCEPT that stays armed: one submission serves many connections. On the
// readiness backends it falls back to one accept per call.
#pragma once

#include <cstddef>
#include <vector>

#include "ringio/detail/io_operation.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio {
namespace detail {

class multishot_accept_state;

extern const op_vtable accept_next_vtable;

/// Waits for the next connection of a multishot_acceptor.
class accept_next_op : public io_operation<accept_next_op> {
 public:
  accept_next_op(multishot_accept_state* s, fd_handle* listener, bool want_direct) noexcept
      : io_operation(&accept_next_vtable, op_kind::event), owner(s), fallback(listener, want_direct) {
    fd = listener->get();  // stream_listener::cancel() finds the waiting next() by its socket
  }
  accept_next_op(const accept_next_op& o) noexcept : io_operation(o), owner(o.owner), fallback(o.fallback) {}

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (stopped_without_multishot()) return false;
    if (!uses_multishot()) {
      use_fallback = true;
      fallback.deadline_ns = deadline_ns;
      fallback.set_stop_token(token_);
      return fallback.await_suspend(h);
    }
    if (take_ready()) return false;
    return wait(io_operation::await_suspend(h));
  }
  result<stream_socket> get_result() noexcept {
    if (use_fallback) return fallback.get_result();
    if (res < 0) return unexpected(op_error(*this));
    if (accepted_direct) return stream_socket(direct_handle());
    return stream_socket(fd_handle(res, false));
  }

  multishot_accept_state* owner;
  accept_op fallback;
  bool use_fallback = false;
  bool accepted_direct = false;  // res is a slot of the file table

 private:
  static bool uses_multishot() noexcept;
  bool take_ready() noexcept;                 // a connection or an error is already queued
  bool stopped_without_multishot() noexcept;  // after stop(), on a readiness backend
  bool wait(bool suspended) noexcept;
  fd_handle direct_handle() const noexcept;
};

}  // namespace detail

/// Accepts connections from `listener` (which must outlive it) with a multishot accept.
/// Accepted sockets queue up inside until next() takes them; whatever is queued when
/// the acceptor is destroyed is closed. Errors (EMFILE, ...) end the multishot request
/// and are reported by next(); the following next() re-arms it.
///
/// With direct descriptors (listen_options::direct_descriptors on the listener when the
/// acceptor is created, on a loop with a file table) the multishot request accepts into
/// the table while at least 1/16 of it (1 to 64 slots) is free; below that it is
/// cancelled and connections come one normal accept at a time until slots free up. A
/// burst larger than that headroom arriving at once can still find the table full: the
/// kernel then drops that one connection (the client sees a reset), and the acceptor
/// goes on with normal accepts.
class multishot_acceptor {
 public:
  /// Accepts on `listener`, which must outlive the acceptor. Create it on the loop thread.
  explicit multishot_acceptor(stream_listener& listener);
  ~multishot_acceptor();
  multishot_acceptor(const multishot_acceptor&) = delete;
  multishot_acceptor& operator=(const multishot_acceptor&) = delete;

  /// The next accepted connection (or error). Obeys stop tokens like any operation;
  /// a cancelled next() loses no connection (it stays queued for the next call).
  [[nodiscard]] detail::accept_next_op next() noexcept;

  /// Stops accepting without losing what was accepted: the multishot request is
  /// cancelled and not armed again; next() then still returns the connections queued
  /// and those the kernel accepted before the cancel took effect, and completes with
  /// operation_canceled once the request has ended and none is left. On readiness
  /// backends (no multishot request) next() completes with operation_canceled at once.
  /// Connections not yet accepted stay in the listener's backlog. Loop thread only.
  void stop() noexcept;

 private:
  detail::multishot_accept_state* state_;
  detail::fd_handle* listener_;
  bool direct_;
};

}  // namespace ringio
