// SPDX-License-Identifier: Apache-2.0
#include "ringio/net/stream_listener.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>

#include "core/sys.hpp"
#include "net/socket_util.hpp"
#include "ringio/io_context.hpp"

namespace ringio {
namespace detail {

namespace {

// io_uring wants the listener blocking (its poll retry handles readiness); readiness
// backends need it non-blocking. A failing fcntl leaves the mode as it was: the accept
// still works, only less efficiently.
void accept_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<accept_op&>(b);
  op.listener->set_nonblocking(false);
  op.accepted_nonblocking = false;
  // A slot is reserved now: a direct accept that finds the table full would drop the
  // connection it already took off the backlog (the kernel closes it, ENFILE).
  op.direct = op.want_direct && op.ctx->direct_free() > 0;
  if (op.direct) {
    op.ctx->direct_reserve();
    // No SOCK_CLOEXEC (EINVAL with a table slot). ALLOC - 1: liburing 2.3 stores index + 1
    // without special-casing ALLOC (later versions do; both then send ALLOC).
    io_uring_prep_accept_direct(&sqe, op.fd, nullptr, nullptr, 0, IORING_FILE_INDEX_ALLOC - 1);
  } else {
    io_uring_prep_accept(&sqe, op.fd, nullptr, nullptr, SOCK_CLOEXEC);
  }
}

void accept_complete(op_base& b) noexcept {
  auto& op = static_cast<accept_op&>(b);
  if (op.direct && op.res < 0) op.ctx->direct_unreserve();  // no slot was filled
  resume_waiter(op);
}

int accept_attempt(op_base& b) noexcept {
  auto& op = static_cast<accept_op&>(b);
  op.listener->set_nonblocking(true);
  op.accepted_nonblocking = true;
  int r = ::ringio::detail::sys::accept4(op.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  return r >= 0 ? r : -errno;
}

}  // namespace

const op_vtable accept_vtable = {.prepare = accept_prepare,
                                 .attempt = accept_attempt,
                                 .on_cqe = nullptr,
                                 .step = nullptr,
                                 .complete = accept_complete};

}  // namespace detail

result<stream_listener> stream_listener::bind(const socket_address& at, listen_options opts) {
  if (at.family() == AF_UNSPEC) return unexpected(errc::invalid_address);
  int s = ::ringio::detail::sys::socket(at.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return unexpected(errno_code(-errno));
  detail::fd_handle fd(s);
  auto fail = [] { return unexpected(errno_code(-errno)); };
  int one = 1;
  const bool ip = at.is_ipv4() || at.is_ipv6();
  if (ip && opts.reuse_address && ::ringio::detail::sys::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
    return fail();
  if (opts.reuse_port && ::ringio::detail::sys::setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
    return fail();
  if (ip && opts.nodelay && ::ringio::detail::sys::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
    return fail();
  if (at.is_ipv6()) {
    int v6only = opts.ipv6_only ? 1 : 0;
    if (::ringio::detail::sys::setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) < 0) return fail();
  }
  if (::ringio::detail::sys::bind(s, at.native(), at.size()) < 0) return fail();
  if (::ringio::detail::sys::listen(s, opts.backlog) < 0) return fail();
  return stream_listener(std::move(fd), opts.direct_descriptors);
}

void stream_listener::cancel() noexcept {
  io_context* ctx = io_context::current();
  if (ctx != nullptr && fd_.valid()) ctx->cancel_fd(fd_.get(), false);
}

result<socket_address> stream_listener::local_address() const { return detail::address_of(fd_.get(), false); }

}  // namespace ringio
