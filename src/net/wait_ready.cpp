// SPDX-License-Identifier: Apache-2.0
// Readiness waits on descriptors ringio does not own: a poll request on io_uring, a
// poll(2) check with no timeout for the readiness backends (their wait lists do the
// waiting between checks).
#include "ringio/net/wait_ready.hpp"

#include <liburing.h>
#include <poll.h>

#include <cerrno>

#include "ringio/detail/fd_generation.hpp"

namespace ringio {
namespace detail {
namespace {

short events_of(const op_base& op) noexcept {
  return op.want == interest::readable ? static_cast<short>(POLLIN) : static_cast<short>(POLLOUT);
}

void fd_wait_prepare(op_base& op, io_uring_sqe& sqe) noexcept {
  io_uring_prep_poll_add(&sqe, op.fd, static_cast<unsigned>(events_of(op)));
}

// Ready: the revents (> 0); not yet: -EAGAIN; closed: -EBADF.
int fd_wait_attempt(op_base& op) noexcept {
  pollfd p{op.fd, events_of(op), 0};
  const int n = ::poll(&p, 1, 0);
  if (n < 0) return -errno;
  if (n == 0) return -EAGAIN;
  if ((p.revents & POLLNVAL) != 0) return -EBADF;
  return p.revents;
}

// A poll request's answer is a revents mask; POLLNVAL means the descriptor is not open.
void fd_wait_complete(op_base& op) noexcept {
  if (op.res > 0 && (op.res & POLLNVAL) != 0) op.res = -EBADF;
  resume_waiter(op);
}

}  // namespace

const op_vtable fd_wait_vtable = {.prepare = fd_wait_prepare,
                                  .attempt = fd_wait_attempt,
                                  .on_cqe = nullptr,
                                  .step = nullptr,
                                  .complete = fd_wait_complete};

}  // namespace detail

void forget_descriptor(int fd) noexcept { detail::note_fd_closed(fd); }

}  // namespace ringio
