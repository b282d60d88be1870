// SPDX-License-Identifier: Apache-2.0
// Waits on a foreign epoll set: IORING_OP_EPOLL_WAIT where the kernel's probe has it
// (optional_opcode: the backend otherwise runs attempt() and waits for readiness),
// epoll_wait(2) with no timeout on the readiness backends.
#include "ringio/net/epoll_wait.hpp"

#include <liburing.h>

#include <cerrno>
#include <cstdint>

#include "backend/uring/uring_compat.hpp"

namespace ringio::detail {
namespace {

epoll_wait_op& as_epoll_wait(op_base& op) noexcept { return static_cast<epoll_wait_op&>(op); }

void epoll_wait_prepare(op_base& op, io_uring_sqe& sqe) noexcept {
  epoll_wait_op& w = as_epoll_wait(op);
  io_uring_prep_rw(op_epoll_wait, &sqe, op.fd, w.events(), static_cast<unsigned>(w.max_events()), 0);
}

// Events taken: their count (> 0); none ready: -EAGAIN (wait until the epoll
// descriptor is readable, then try again).
int epoll_wait_attempt(op_base& op) noexcept {
  epoll_wait_op& w = as_epoll_wait(op);
  const int n = ::epoll_wait(op.fd, w.events(), w.max_events(), 0);
  if (n < 0) return errno == EINTR ? -EAGAIN : -errno;
  return n == 0 ? -EAGAIN : n;
}

}  // namespace

const op_vtable epoll_wait_vtable = {.prepare = epoll_wait_prepare,
                                     .attempt = epoll_wait_attempt,
                                     .on_cqe = nullptr,
                                     .step = nullptr,
                                     .complete = resume_waiter,
                                     .optional_opcode = static_cast<std::uint8_t>(op_epoll_wait)};

}  // namespace ringio::detail
