// SPDX-License-Identifier: Apache-2.0
// zero_copy_send — turning a prepared IORING_OP_SEND into IORING_OP_SEND_ZC. The two
// share the SQE layout; SEND_ZC posts a second CQE (IORING_CQE_F_NOTIF) once the
// kernel no longer reads the buffer, and the backend completes the operation only then.
#pragma once

#include <liburing.h>

#include <cerrno>
#include <cstddef>

#include "backend/uring/uring_compat.hpp"
#include "ringio/detail/op_base.hpp"

namespace ringio::detail {

/// Rewrites `sqe` as a zero-copy send when it is a plain send of at least `threshold`
/// bytes (0: never) that selects no provided buffer; marks `op`. Returns whether it did.
inline bool use_zero_copy_send(op_base& op, io_uring_sqe& sqe, std::size_t threshold) noexcept {
  if (threshold == 0 || op.zero_copy_refused || sqe.opcode != IORING_OP_SEND || sqe.len < threshold) return false;
  if ((sqe.flags & IOSQE_BUFFER_SELECT) != 0 || (sqe.ioprio & IORING_RECVSEND_BUNDLE) != 0) return false;
  sqe.opcode = IORING_OP_SEND_ZC;
  // The notification then says whether the kernel had to copy after all (loopback does).
  sqe.ioprio |= IORING_SEND_ZC_REPORT_USAGE;
  op.zero_copy = true;
  return true;
}

/// A SEND_ZC the socket refused (not every socket family supports it: AF_UNIX does not)
/// is sent again by copy, unless it was stopped or timed out meanwhile.
inline bool retry_without_zero_copy(op_base& op) noexcept {
  if (!op.zero_copy) return false;
  op.zero_copy = false;
  if (op.res != -EOPNOTSUPP) return false;
  if (op.cancel_requested || op.timed_out) {
    op.res = -ECANCELED;  // nothing was sent: the stop (or deadline) is the outcome
    return false;
  }
  op.zero_copy_refused = true;
  return true;
}

}  // namespace ringio::detail
