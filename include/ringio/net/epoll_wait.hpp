// SPDX-License-Identifier: Apache-2.0
// ringio/net/epoll_wait.hpp — waits on an epoll set that comes with a C library (or any
// code with an epoll instance of its own) and takes its ready events, from a loop.
#pragma once

#include <sys/epoll.h>

#include <span>

#include "ringio/detail/epoll_wait_op.hpp"

namespace ringio {

/// Waits until the epoll instance `epoll_fd` has at least one ready event and takes up
/// to `events.size()` of them into the front of `events`, as `epoll_wait(2)` does;
/// the result is how many (at least 1). io_uring on Linux 6.15+: one
/// `IORING_OP_EPOLL_WAIT` request, nothing else in between; elsewhere (older kernels,
/// epoll and uring-poll backends, sim with a real descriptor) the loop waits until the
/// epoll descriptor is readable, as wait_readable() does, and calls `epoll_wait(2)` with a
/// zero timeout, waiting again if another reader took the events first. The epoll
/// descriptor stays the caller's. `events` must stay valid until the operation
/// finishes. Errors: bad_file_descriptor (not open), invalid_argument (not an epoll
/// descriptor, or an empty span). A stop (the task's token, .with_stop) cancels it with
/// operation_canceled; with_timeout(epoll_wait(ep, events), d) gives timed_out; either
/// way no event is taken. Closing the descriptor does not end a wait in progress (the
/// kernel keeps the instance open while it is waited on): stop the wait first, then
/// close it and call forget_descriptor(). One wait per epoll descriptor at a time per
/// loop, like wait_readable().
[[nodiscard]] inline detail::epoll_wait_op epoll_wait(int epoll_fd, std::span<epoll_event> events) noexcept {
  return {epoll_fd, events};
}

}  // namespace ringio
