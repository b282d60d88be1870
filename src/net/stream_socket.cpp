// SPDX-License-Identifier: Apache-2.0
#include "ringio/net/stream_socket.hpp"

#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "core/sys.hpp"
#include "net/socket_util.hpp"
#include "ringio/detail/fd_generation.hpp"
#include "ringio/io_context.hpp"

namespace ringio {
namespace detail {

result<socket_address> address_of(int fd, bool peer) {
  socket_address a;
  *a.size_ptr() = socket_address::capacity;
  int r = peer ? ::ringio::detail::sys::getpeername(fd, a.native(), a.size_ptr())
               : ::ringio::detail::sys::getsockname(fd, a.native(), a.size_ptr());
  if (r < 0) return unexpected(errno_code(-errno));
  return a;
}

int set_nodelay(int fd, bool on) noexcept {
  int v = on ? 1 : 0;
  return ::ringio::detail::sys::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v) < 0 ? -errno : 0;
}

namespace {

void connect_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<connect_op&>(b);
  io_uring_prep_connect(&sqe, op.fd, op.addr.native(), op.addr.size());
}

int connect_attempt(op_base& b) noexcept {
  auto& op = static_cast<connect_op&>(b);
  if (!op.in_progress) {
    if (::ringio::detail::sys::connect(op.fd, op.addr.native(), op.addr.size()) == 0) return 0;
    if (errno == EINPROGRESS) {
      op.in_progress = true;  // writable means connected or failed: ask SO_ERROR then
      return -EAGAIN;
    }
    return -errno;  // EAGAIN (a full Unix backlog) retries the connect itself
  }
  int err = 0;
  socklen_t len = sizeof err;
  if (::ringio::detail::sys::getsockopt(op.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return -errno;
  return -err;
}

}  // namespace

const op_vtable connect_vtable = {.prepare = connect_prepare,
                                  .attempt = connect_attempt,
                                  .on_cqe = nullptr,
                                  .step = nullptr,
                                  .complete = resume_waiter};

int connect_op::open_socket() noexcept {
  if (sock.valid()) return 0;
  io_context* ctx = io_context::current();
  bool nonblocking = ctx != nullptr && ctx->backend() != backend_kind::uring;
  int s =
      ::ringio::detail::sys::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (s < 0) return -errno;
  sock = fd_handle(s, nonblocking);
  fd = s;
  if (local.family() == AF_UNSPEC) return 0;
  if ((local.is_ipv4() || local.is_ipv6()) && local.port() == 0) {
    int on = 1;  // a best effort: without it the bind takes a port of its own
    (void)::ringio::detail::sys::setsockopt(s, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
  }
  if (::ringio::detail::sys::bind(s, local.native(), local.size()) < 0) {
    int err = -errno;
    sock = fd_handle();
    fd = -1;
    return err;
  }
  return 0;
}

result<stream_socket> connect_op::get_result() {
  if (res < 0) return unexpected(op_error(*this));
  if (addr.is_ipv4() || addr.is_ipv6()) set_nodelay(sock.get(), true);
  return stream_socket(std::move(sock));
}

}  // namespace detail

detail::close_op stream_socket::close() noexcept {
  if (fd_.is_direct()) {
    io_context* owner = fd_.direct_owner();
    if (!owner->on_loop_thread()) {
      // The slot means nothing to this loop's ring: the close fails with
      // cross_device_link when awaited, and the socket stays open on its own loop.
      detail::close_op refused(fd_.get(), true);
      refused.direct_owner = owner;
      return refused;
    }
    owner->direct_unreserve();  // the close operation frees the slot
    return detail::close_op(fd_.release(), true);
  }
  int fd = fd_.release();
  detail::note_fd_closed(fd);
  return detail::close_op(fd);
}

void stream_socket::abort() noexcept {
  if (!fd_.valid()) return;
  if (int fd = native_handle(); fd >= 0) {
    linger l{1, 0};
    (void)::ringio::detail::sys::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  *this = stream_socket{};  // the descriptor closes now, through ringio (fd_handle)
}

void stream_socket::cancel() noexcept {
  io_context* ctx = io_context::current();
  if (ctx == nullptr || !fd_.valid()) return;
  if (fd_.is_direct() && fd_.direct_owner() != ctx) return;  // its operations run on the owner
  ctx->cancel_fd(fd_.get(), fd_.is_direct());
}

result<void> stream_socket::install_fd() noexcept {
  if (int r = fd_.install(); r < 0) return unexpected(errno_code(r));
  return {};
}

int stream_socket::native_handle() const noexcept {
  if (fd_.is_direct() && fd_.install() < 0) return -1;
  return fd_.get();
}

int stream_socket::release() noexcept {
  if (fd_.is_direct() && fd_.install() < 0) return -1;
  return fd_.release();
}

result<socket_address> stream_socket::local_address() const { return detail::address_of(native_handle(), false); }
result<socket_address> stream_socket::peer_address() const { return detail::address_of(native_handle(), true); }

result<void> stream_socket::set_nodelay(bool on) noexcept {
  if (int r = detail::set_nodelay(native_handle(), on); r < 0) return unexpected(errno_code(r));
  return {};
}

}  // namespace ringio
