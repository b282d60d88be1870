// SPDX-License-Identifier: Apache-2.0
// ringio/net/wait_ready.hpp — waits for readiness of a descriptor that ringio does not
// own (a C library's socket, a pipe, an eventfd), so such a library can be driven from
// a loop: wait, then let the library do its own non-blocking read or write.
#pragma once

#include "ringio/detail/fd_wait_op.hpp"

namespace ringio {

/// Waits until `fd` is readable (data, end of stream, an error or a hang-up: the next
/// read tells which). Nothing is read; the descriptor stays the caller's and its mode
/// (O_NONBLOCK) is left alone. io_uring: IORING_OP_POLL_ADD; epoll and uring-poll: the
/// backend's readiness wait; sim: a real descriptor only (the loop polls it). Errors:
/// bad_file_descriptor (not open). A stop (the task's token, .with_stop) cancels it
/// with operation_canceled; with_timeout(wait_readable(fd), d) gives timed_out. One
/// readiness wait per direction and descriptor at a time per loop, like a socket's
/// recv. A descriptor that someone else closes must be reported with
/// forget_descriptor() before its number may be reused.
[[nodiscard]] inline detail::fd_wait_op wait_readable(int fd) noexcept { return {fd, detail::interest::readable}; }

/// Waits until `fd` is writable (room to write, or an error or hang-up). As
/// wait_readable otherwise.
[[nodiscard]] inline detail::fd_wait_op wait_writable(int fd) noexcept { return {fd, detail::interest::writable}; }

/// Tells ringio that `fd`, on which it waited, was closed by code other than ringio's:
/// the epoll backend keeps one registration per descriptor number and must not take a
/// new file with the same number for the old one. Call it right after (or before) the
/// close, from any thread.
void forget_descriptor(int fd) noexcept;

}  // namespace ringio
