// SPDX-License-Identifier: Apache-2.0
// ringio/detail/wait_child_op.hpp — waits for a child to end and reaps it, through its
// pidfd: IORING_OP_WAITID where the kernel's probe has it (6.7), else a poll of the
// pidfd then waitid(WNOHANG); on the readiness backends the pidfd in the wait set.
#pragma once

#include <signal.h>

#include "ringio/detail/io_operation.hpp"
#include "ringio/process/exit_status.hpp"
#include "ringio/result.hpp"

namespace ringio::detail {

extern const op_vtable wait_child_vtable;

/// The wait of child::wait(): the child's exit status once it ended (it is then reaped).
class wait_child_op : public io_operation<wait_child_op> {
 public:
  wait_child_op(int pidfd, bool* reaped_flag, process::exit_status* status) noexcept
      : io_operation(&wait_child_vtable), reaped(reaped_flag), saved(status) {
    fd = pidfd;
    want = interest::readable;
  }
  result<process::exit_status> get_result() noexcept;

  siginfo_t info{};
  bool* reaped;                 ///< the child's own flag: set once the kernel reaped it
  process::exit_status* saved;  ///< the child's copy of the status, for later waits
  bool used_waitid = false;     ///< io_uring: the request was an IORING_OP_WAITID
};

}  // namespace ringio::detail
