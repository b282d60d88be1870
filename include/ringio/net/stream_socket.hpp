// SPDX-License-Identifier: Apache-2.0
// ringio/net/stream_socket.hpp — a connected stream socket: TCP (tcp_stream) or
// Unix-domain (unix_stream). Closes its descriptor when destroyed.
#pragma once

#include <sys/socket.h>

#include <span>

#include "ringio/buffer.hpp"
#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/gather_send_op.hpp"
#include "ringio/detail/stream_ops.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/result.hpp"

namespace ringio {

namespace detail {
class connect_op;
}

/// A connected stream socket. One recv and one send may be in flight at a time.
/// Every operation obeys the awaiting task's stop token (or one given with
/// .with_stop(token)): a stop cancels it with std::errc::operation_canceled.
///
/// It may hold a direct descriptor instead of a normal one (accepted by a listener
/// with listen_options::direct_descriptors on a loop that has a file table, see
/// io_context_options::direct_descriptors): a slot of that loop's io_uring file table.
/// Its operations then skip the kernel's per-operation file lookup. Such a socket is
/// usable only on the loop that accepted it (an operation awaited on another loop fails
/// with cross_device_link and touches nothing); every path that needs a real descriptor
/// (native_handle(), release(), the address and option calls, send_file, buffered_stream,
/// copy_bidirectional) first installs it as a normal one (install_fd()).
class stream_socket {
 public:
  stream_socket() noexcept = default;
  /// Owns `fd` (made by accept and connect).
  explicit stream_socket(detail::fd_handle fd) noexcept : fd_(std::move(fd)) {}

  /// Connects to `to` (TCP: with TCP_NODELAY set). Errors: connection_refused,
  /// timed_out (with with_timeout), network_unreachable, ...
  [[nodiscard]] static detail::connect_op connect(const socket_address& to) noexcept;
  /// Connects to `to` from the local address `from` (bound before connecting). With
  /// port 0 in an IP `from`, the port is chosen at connect time for the full
  /// four-tuple (IP_BIND_ADDRESS_NO_PORT), so many sources can each use the whole
  /// ephemeral range towards one server port. An empty `from` (socket_address{}) is
  /// the same as connect(to). Errors of the bind come back from the
  /// await: address_not_available, address_in_use, address_family_not_supported, ...
  [[nodiscard]] static detail::connect_op connect(const socket_address& to, const socket_address& from) noexcept;
  /// Takes ownership of `fd`, a connected stream socket opened by other code (TCP or
  /// Unix; a C library's, an inherited one). Checked first: not a socket
  /// (not_a_socket), not a stream socket (wrong_protocol_type), another family
  /// (address_family_not_supported), a listening socket (invalid_argument), not
  /// connected (not_connected), not open (bad_file_descriptor); on an error the
  /// descriptor is left as it was and stays the caller's. On success the socket owns it
  /// (closes it when destroyed; do not close it elsewhere) and manages its O_NONBLOCK
  /// flag (cleared now: ringio's sockets are blocking for io_uring, and the readiness
  /// backends pass MSG_DONTWAIT).
  static result<stream_socket> adopt(int fd);

  /// Receives up to buf.size() bytes. 0 means the peer closed its sending side.
  [[nodiscard]] detail::recv_op recv(mutable_buffer buf, int flags = 0) noexcept {
    detail::recv_op op{fd_.get(), buf, flags};
    op.deferred_error = &deferred_error_;
    op.fixed_file = fd_.is_direct();
    op.direct_owner = fd_.direct_owner();
    return op;
  }
  /// Receives until buf is full. A shorter count means the stream ended, or that the
  /// operation stopped early (a stop, cancel(), a timeout or an error) after some bytes
  /// had arrived: like read(2), the bytes received are never lost, and the error is
  /// reported only when nothing was received. A reset (or another error that ends the
  /// connection) hidden that way is reported by the next recv or recv_exact, which the
  /// kernel would otherwise answer with 0 (end of stream).
  [[nodiscard]] detail::recv_exact_op recv_exact(mutable_buffer buf) noexcept {
    detail::recv_exact_op op{fd_.get(), buf};
    op.deferred_error = &deferred_error_;
    op.fixed_file = fd_.is_direct();
    op.direct_owner = fd_.direct_owner();
    return op;
  }
  /// Sends some of buf (possibly fewer bytes than given).
  [[nodiscard]] detail::send_op send(const_buffer buf, int flags = 0) noexcept {
    return on_socket(detail::send_op{fd_.get(), buf, flags});
  }
  /// Sends all of buf, looping over short sends. The result is buf.size(), or, like
  /// write(2), a shorter count when it stopped early (a stop, cancel(), a timeout or an
  /// error such as broken_pipe) after sending some bytes: that many bytes from the start
  /// of buf were sent. The error is reported only when nothing was sent.
  [[nodiscard]] detail::send_all_op send_all(const_buffer buf) noexcept {
    return on_socket(detail::send_all_op{fd_.get(), buf});
  }
  /// Sends some of the bytes of `bufs`, in order, with one sendmsg(2) (a gather write:
  /// no copy into one block): at most the first 64 non-empty buffers
  /// (detail::max_gather_buffers) go in one call. Result: the bytes sent, possibly fewer
  /// than given; 0 when every buffer is empty (no syscall). Errors: those of
  /// sendmsg(2), e.g. broken_pipe (no SIGPIPE), connection_reset. Cancellation:
  /// operation_canceled. `bufs` and the bytes must stay valid until it completes.
  [[nodiscard]] detail::gather_send_op send(std::span<const const_buffer> bufs) noexcept {
    return on_socket(detail::gather_send_op{fd_.get(), bufs, false});
  }
  /// Sends every byte of `bufs`, in order, one sendmsg(2) per attempt (up to 64 buffers
  /// each), continuing after partial sends in the middle of a buffer. The result
  /// contract is send_all's: the total, or a shorter count when it stopped early (a stop,
  /// cancel(), a timeout or an error) after sending some bytes (the first ones, in
  /// order); the error only when nothing was sent. `bufs` and the bytes must stay valid
  /// until it completes.
  [[nodiscard]] detail::gather_send_op send_all(std::span<const const_buffer> bufs) noexcept {
    return on_socket(detail::gather_send_op{fd_.get(), bufs, true});
  }
  /// shutdown(2): SHUT_WR sends FIN after the data already queued.
  [[nodiscard]] detail::shutdown_op shutdown(int how = SHUT_WR) noexcept {
    return on_socket(detail::shutdown_op{fd_.get(), how});
  }
  /// Closes the socket through the ring (a direct descriptor: its slot, with the close
  /// operation's file_index); the socket is empty afterwards. Obeys no stop token. A
  /// direct descriptor closed on another loop than its own reports cross_device_link
  /// and stays open (usable, and closed, on its loop).
  [[nodiscard]] detail::close_op close() noexcept;
  /// Cancels every operation of the calling thread's loop that waits on this socket
  /// (recv, send, recv_exact, send_all, connect, and the next() of a multishot_receiver
  /// reading it): each completes with operation_canceled, or with its real result if
  /// that had already arrived (recv_exact and send_all: the bytes moved so far, if
  /// any). Data not yet received stays in the socket; the socket remains usable. Call
  /// it on the thread that runs the loop those operations were started on; elsewhere
  /// (or on a closed socket) it does nothing. Operations started after the call are
  /// not affected.
  void cancel() noexcept;

  /// Closes the socket at once with a reset (SO_LINGER 0, then close): a TCP peer
  /// reads connection_reset instead of end of stream, so it cannot take a stream cut
  /// short for a complete one (a proxy whose backend failed, a server giving up on a
  /// request half sent). Unsent data is discarded. The socket is empty afterwards.
  /// Operations still waiting on it must be cancelled first, as before any close.
  void abort() noexcept;

  /// The local address (getsockname).
  [[nodiscard]] result<socket_address> local_address() const;
  /// The peer's address (getpeername). Errors: what getpeername(2) reports (not_connected, ...).
  [[nodiscard]] result<socket_address> peer_address() const;
  /// TCP_NODELAY on or off (TCP only).
  result<void> set_nodelay(bool on) noexcept;

  /// Whether it holds a descriptor (normal or direct).
  [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
  /// Whether it holds a direct descriptor (a slot of its loop's io_uring file table).
  [[nodiscard]] bool is_direct() const noexcept { return fd_.is_direct(); }
  /// Turns a direct descriptor into a normal one that plain syscalls can use, and frees
  /// its table slot; nothing to do (success) for a normal descriptor. Synchronous: one
  /// IORING_OP_FIXED_FD_INSTALL submitted and waited for on the spot (one
  /// `io_uring_enter`; completions of other operations that arrive meanwhile are kept
  /// for the loop, not run here), plus a close of the slot sent with the next submit.
  /// Call it on the loop that accepted the socket while none of its operations (nor a
  /// multishot_receiver on it) is in flight: those hold the slot number, which a later
  /// accept may reuse. Errors: cross_device_link (called on another thread), those of
  /// the install (bad_file_descriptor, ...; the socket is then unchanged). Not
  /// cancellable (it does not wait for the peer).
  result<void> install_fd() noexcept;
  /// The descriptor (still owned by the socket). A direct descriptor is installed as a
  /// normal one first (install_fd()); -1 when that fails.
  [[nodiscard]] int native_handle() const noexcept;
  /// Gives up ownership of the descriptor (a direct one is installed first, as by
  /// native_handle(); -1 when that fails, the socket then keeps it). Close it through
  /// ringio again (wrap it in a stream_socket, or hand it to another loop) rather than
  /// with `close(2)`: the epoll backend notices that a descriptor number was reused only
  /// when ringio closed it, and a later socket given the same number would otherwise
  /// never be registered.
  int release() noexcept;

  /// @cond INTERNAL
  /// Where an error hidden by a short count waits for the next receive (a negative
  /// errno, 0 for none); buffered_stream shares it.
  int& deferred_error_slot() noexcept { return deferred_error_; }
  /// What operations name: the descriptor or the direct descriptor's slot (with
  /// op_base::fixed_file set from is_direct()).
  [[nodiscard]] int operation_fd() const noexcept { return fd_.get(); }
  /// A direct descriptor's loop; null for a normal descriptor.
  [[nodiscard]] io_context* direct_owner() const noexcept { return fd_.direct_owner(); }
  /// Marks `op` as an operation on this socket's kind of descriptor.
  template <class Op>
  Op on_socket(Op op) const noexcept {
    op.fixed_file = fd_.is_direct();
    op.direct_owner = fd_.direct_owner();
    return op;
  }
  /// @endcond

 private:
  // mutable: the const paths that need a real descriptor install a direct one first
  mutable detail::fd_handle fd_;
  int deferred_error_ = 0;  // a negative errno hidden by a short recv_exact, for the next receive
};

using tcp_stream = stream_socket;
using unix_stream = stream_socket;

}  // namespace ringio

#include "ringio/detail/connect_op.hpp"
