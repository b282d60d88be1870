// SPDX-License-Identifier: Apache-2.0
// ringio/net/stream_listener.hpp — a listening stream socket (TCP or Unix-domain).
#pragma once

#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/result.hpp"

namespace ringio {

class multishot_acceptor;

/// How stream_listener::bind() sets up the socket.
struct listen_options {
  /// SO_REUSEADDR: rebind at once after a restart (TCP).
  bool reuse_address = true;
  /// SO_REUSEPORT: several listeners (one per thread) share the port; the kernel
  /// spreads connections among them.
  bool reuse_port = false;
  /// listen(2) backlog.
  int backlog = 4096;
  /// TCP_NODELAY on the listener: Linux copies it to every accepted socket, so
  /// request/response traffic is not held back by Nagle's algorithm.
  bool nodelay = true;
  /// IPV6_V6ONLY for [::] listeners.
  bool ipv6_only = false;
  /// Accept into the loop's io_uring file table (direct descriptors, see
  /// io_context_options::direct_descriptors) when it has one with a free slot: the
  /// accepted stream_socket is then a direct one (stream_socket::is_direct()). When the
  /// table is full, or the loop has none (epoll, uring-poll, older kernels, no table
  /// asked for), accepts return normal descriptors: a full table never refuses a
  /// connection. Measured gain: see docs/performance.md ("Direct descriptors").
  bool direct_descriptors = false;
};

namespace detail {

extern const op_vtable accept_vtable;

/// Accepts one connection.
class accept_op : public io_operation<accept_op> {
 public:
  accept_op(fd_handle* l, bool want_direct_) noexcept
      : io_operation(&accept_vtable), listener(l), want_direct(want_direct_) {
    fd = l->get();
    want = interest::readable;
  }
  result<stream_socket> get_result() noexcept {
    if (res < 0) return unexpected(op_error(*this));
    if (direct) return stream_socket(fd_handle::direct(res, *ctx));
    return stream_socket(fd_handle(res, accepted_nonblocking));
  }

  fd_handle* listener;
  bool accepted_nonblocking = false;
  bool want_direct;     // the listener asks for direct descriptors
  bool direct = false;  // this accept fills a slot of the file table (io_uring)
};

}  // namespace detail

/// A listening TCP or Unix stream socket. Closes itself when destroyed.
class stream_listener {
 public:
  stream_listener() noexcept = default;

  /// Creates, binds and listens. Errors: address_in_use, permission_denied,
  /// address_not_available, and the parse errors of socket_address.
  static result<stream_listener> bind(const socket_address& at, listen_options opts = {});
  /// Takes ownership of `fd`, a listening stream socket opened by other code (TCP or
  /// Unix; one inherited from a supervisor, systemd's socket activation). Checked
  /// first: not a socket (not_a_socket), not a stream socket (wrong_protocol_type),
  /// another family (address_family_not_supported), not listening (invalid_argument),
  /// not open (bad_file_descriptor); on an error the descriptor is left as it was and
  /// stays the caller's. On success the listener owns it (closes it when destroyed),
  /// sets FD_CLOEXEC on it, and switches its O_NONBLOCK flag as its backend needs.
  static result<stream_listener> adopt(int fd);

  /// Accepts the next connection. A cancel that loses the race still delivers the
  /// accepted socket (it is never leaked). EMFILE/ENFILE are reported as errors; the
  /// listener stays usable and accepting again later succeeds once fds are free. With
  /// direct descriptors on (listen_options::direct_descriptors), a direct socket when
  /// the loop's file table has a free slot, else a normal one.
  [[nodiscard]] detail::accept_op accept() noexcept { return detail::accept_op(&fd_, direct_); }
  /// Turns direct descriptors (listen_options::direct_descriptors) on or off for later
  /// accepts (and acceptors created afterwards).
  void set_direct_descriptors(bool on) noexcept { direct_ = on; }
  /// Whether accepts ask for direct descriptors.
  [[nodiscard]] bool direct_descriptors() const noexcept { return direct_; }

  /// The bound address (with the port the kernel chose for port 0).
  [[nodiscard]] result<socket_address> local_address() const;
  /// Whether it holds a descriptor.
  [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
  /// The descriptor (still owned by the listener).
  [[nodiscard]] int native_handle() const noexcept { return fd_.get(); }
  /// Closes the listener now.
  void close() noexcept { fd_.reset(); }
  /// Cancels every accept of the calling thread's loop waiting on this listener (and
  /// the next() of a multishot_acceptor on it): each completes with
  /// operation_canceled, or with the connection it had already accepted. Connections
  /// not yet accepted stay in the backlog. Loop thread only; elsewhere it does nothing.
  void cancel() noexcept;

 private:
  friend class multishot_acceptor;
  stream_listener(detail::fd_handle fd, bool direct) noexcept : fd_(std::move(fd)), direct_(direct) {}
  detail::fd_handle fd_;
  bool direct_ = false;
};

using tcp_listener = stream_listener;
using unix_listener = stream_listener;

}  // namespace ringio
