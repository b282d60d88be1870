// SPDX-License-Identifier: Apache-2.0
// ringio/net/send_file.hpp — sends part of a file to a stream socket inside the kernel
// (sendfile(2)): no user-space buffer, no copy. Waits for writability between
// attempts; a slow reader costs the server no memory.
#pragma once

#include <cstdint>

#include "ringio/detail/io_operation.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio {
namespace detail {

extern const op_vtable send_file_vtable;

class send_file_op : public io_operation<send_file_op> {
 public:
  send_file_op(int socket_fd, int file_fd_, std::uint64_t offset_, std::uint64_t count_) noexcept
      : io_operation(&send_file_vtable), file_fd(file_fd_), offset(offset_), count(count_) {
    fd = socket_fd;
    want = interest::writable;
  }
  /// Bytes sent; a short count when it stopped (stop, timeout, error, the file ended)
  /// after sending some, else the error.
  result<std::uint64_t> get_result() const noexcept {
    if (done > 0 || res >= 0) return done;
    return unexpected(op_error(*this));
  }

  int file_fd;
  std::uint64_t offset;
  std::uint64_t count;
  std::uint64_t done = 0;
  bool checked_blocking = false;
  bool made_nonblocking = false;  // and made blocking again at the end
};

}  // namespace detail

/// Sends `count` bytes of the file `file_fd` from `offset` to `socket` with sendfile(2).
/// Result: the bytes sent, like send_all (a short count when stopped, timed out, the
/// file ended early or an error came after some bytes; the error when none were sent).
/// Obeys stop tokens and with_timeout. While it runs no other send may be in flight on
/// the socket. A blocking socket (as io_uring's are) is made non-blocking for its
/// duration, since sendfile has no flag for that (io_uring's recv and send are not
/// affected); on io_uring each wait for writability is a poll request. sendfile(2) cannot suppress SIGPIPE: the first
/// send_file sets SIGPIPE to SIG_IGN if its action is still the default (a peer gone
/// is then the error broken_pipe, as for every other send).
[[nodiscard]] inline detail::send_file_op send_file(stream_socket& socket, int file_fd, std::uint64_t offset,
                                                    std::uint64_t count) noexcept {
  detail::send_file_op op{socket.native_handle(), file_fd, offset, count};
  op.direct_owner = socket.direct_owner();  // still direct: another loop's (cross_device_link)
  return op;
}

}  // namespace ringio
