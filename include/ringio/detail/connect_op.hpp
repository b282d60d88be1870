// SPDX-License-Identifier: Apache-2.0
// ringio/detail/connect_op.hpp — creates a stream socket and connects it.
#pragma once

#include "ringio/detail/io_operation.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio::detail {

extern const op_vtable connect_vtable;

class connect_op : public io_operation<connect_op> {
 public:
  explicit connect_op(const socket_address& to) noexcept : io_operation(&connect_vtable), addr(to) {
    want = interest::writable;
  }
  connect_op(const socket_address& to, const socket_address& from) noexcept : connect_op(to) { local = from; }
  connect_op(const connect_op& o) noexcept : io_operation(o), addr(o.addr), local(o.local) {}

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (int r = before_start(); r < 0) {
      res = r;
      return false;
    }
    return io_operation::await_suspend(h);
  }
  result<stream_socket> get_result();
  /// Creates (and binds) the socket; a negative errno when that failed. Run before the
  /// operation starts (the sender interface calls it too).
  int before_start() noexcept { return open_socket(); }

  socket_address addr;
  socket_address local;  // AF_UNSPEC: let the kernel choose
  fd_handle sock;
  bool in_progress = false;  // readiness: connect(2) said EINPROGRESS

 private:
  int open_socket() noexcept;
};

}  // namespace ringio::detail

namespace ringio {
inline detail::connect_op stream_socket::connect(const socket_address& to) noexcept { return detail::connect_op(to); }
inline detail::connect_op stream_socket::connect(const socket_address& to, const socket_address& from) noexcept {
  return detail::connect_op(to, from);
}
}  // namespace ringio
