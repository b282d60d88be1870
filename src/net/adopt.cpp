// SPDX-License-Identifier: Apache-2.0
// Adopting descriptors opened by other code: each is checked to be what its type
// expects before ringio takes ownership, so a wrong descriptor fails here with a
// clear error rather than later in an operation.
#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>

#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio {
namespace {

int int_option(int fd, int name, int& out) noexcept {
  socklen_t len = sizeof out;
  return ::getsockopt(fd, SOL_SOCKET, name, &out, &len) < 0 ? -errno : 0;
}

// 0 when `fd` is a TCP or Unix stream socket that listens (or not, as `listening`
// says), else the error that explains why it is not.
std::error_code check_stream_socket(int fd, bool listening) noexcept {
  int type = 0;
  if (int r = int_option(fd, SO_TYPE, type); r < 0) return errno_code(r);  // ENOTSOCK, EBADF
  if (type != SOCK_STREAM) return std::make_error_code(std::errc::wrong_protocol_type);
  int domain = 0;
  if (int r = int_option(fd, SO_DOMAIN, domain); r < 0) return errno_code(r);
  if (domain != AF_INET && domain != AF_INET6 && domain != AF_UNIX)
    return std::make_error_code(std::errc::address_family_not_supported);
  int accepting = 0;
  if (int r = int_option(fd, SO_ACCEPTCONN, accepting); r < 0) return errno_code(r);
  if ((accepting != 0) != listening) return std::make_error_code(std::errc::invalid_argument);
  return {};
}

bool is_nonblocking(int fd) noexcept {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) != 0;
}

}  // namespace

result<stream_socket> stream_socket::adopt(int fd) {
  if (std::error_code ec = check_stream_socket(fd, false)) return unexpected(ec);
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) < 0) return unexpected(errno_code(-errno));
  detail::fd_handle h(fd, is_nonblocking(fd));
  if (int r = h.set_nonblocking(false); r < 0) {
    (void)h.release();  // still the caller's
    return unexpected(errno_code(r));
  }
  return stream_socket(std::move(h));
}

result<stream_listener> stream_listener::adopt(int fd) {
  if (std::error_code ec = check_stream_socket(fd, true)) return unexpected(ec);
  // Not inherited by programs this one starts (a listener passed on is passed on purpose).
  if (const int fdflags = ::fcntl(fd, F_GETFD);
      fdflags < 0 || ((fdflags & FD_CLOEXEC) == 0 && ::fcntl(fd, F_SETFD, fdflags | FD_CLOEXEC) < 0))
    return unexpected(errno_code(-errno));
  return stream_listener(detail::fd_handle(fd, is_nonblocking(fd)), false);
}

}  // namespace ringio
