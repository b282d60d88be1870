// SPDX-License-Identifier: Apache-2.0
// Waiting for a child through its pidfd.
#include "ringio/detail/wait_child_op.hpp"

#include <liburing.h>
#include <poll.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "backend/uring/opcode_probe.hpp"
#include "backend/uring/uring_compat.hpp"
#include "ringio/error.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace ringio::detail {
namespace {

process::exit_status status_of(const siginfo_t& info) noexcept {
  if (info.si_code == CLD_EXITED) return {.code = info.si_status, .signal = 0};
  return {.code = -1, .signal = info.si_status};  // CLD_KILLED or CLD_DUMPED
}

// IORING_OP_WAITID as Linux 6.7 reads it: the id in fd, the id type in len, the
// options in file_index, the siginfo in addr2.
void wait_child_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<wait_child_op&>(b);
  op.info = siginfo_t{};
  if (kernel_supports_opcode(op_waitid)) {
    io_uring_prep_rw(op_waitid, &sqe, op.fd, nullptr, P_PIDFD, 0);
    sqe.file_index = WEXITED;
    sqe.addr2 = reinterpret_cast<unsigned long>(&op.info);
    op.used_waitid = true;
  } else {  // older kernels: the pidfd turns readable when the child ends
    io_uring_prep_poll_add(&sqe, op.fd, POLLIN);
    op.used_waitid = false;
  }
}

// Reaps the child if it ended: 0, or -EAGAIN while it runs.
int wait_child_attempt(op_base& b) noexcept {
  auto& op = static_cast<wait_child_op&>(b);
  op.info = siginfo_t{};
  op.used_waitid = true;
  if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(op.fd), &op.info, WEXITED | WNOHANG) < 0)
    return -errno;
  return op.info.si_pid == 0 ? -EAGAIN : 0;
}

}  // namespace

const op_vtable wait_child_vtable = {.prepare = wait_child_prepare,
                                     .attempt = wait_child_attempt,
                                     .on_cqe = nullptr,
                                     .step = nullptr,
                                     .complete = resume_waiter};

result<process::exit_status> wait_child_op::get_result() noexcept {
  if (*reaped) return *saved;  // an earlier wait took the status; it stays the answer
  if (res < 0) {
    if (res == -ECHILD) return unexpected(errno_code(-ECHILD));
    return unexpected(op_error(*this));
  }
  if (!used_waitid) {
    // The poll said the pidfd is readable: the child ended; reap it now.
    if (wait_child_attempt(*this) != 0) return unexpected(errno_code(-ECHILD));
  }
  *saved = status_of(info);
  *reaped = true;
  return *saved;
}

}  // namespace ringio::detail
