// SPDX-License-Identifier: Apache-2.0
// ringio/detail/offload_job.hpp — the blocking-pool job embedded in a file operation:
// on the readiness backends (and on io_uring without the operation's opcode) the
// operation's attempt() runs on a pool thread instead of the loop's. Embedded, so
// offloading allocates nothing; the operation does not complete before its job came
// back, so the job (and every buffer the syscall uses) outlives the syscall.
#pragma once

#include "ringio/detail/blocking_job.hpp"
#include "ringio/detail/op_base.hpp"

namespace ringio::detail {

struct offload_job : blocking_job {
  op_base* op = nullptr;  ///< the operation whose attempt() it runs
  int result = 0;         ///< attempt()'s return, written on the pool thread
};

/// An operation's room for its job. A copy (made before the start: with_timeout, chain)
/// starts with a fresh job.
struct offload_slot {
  offload_job job;
  offload_slot() noexcept = default;
  offload_slot(const offload_slot& /*unused*/) noexcept {}
  offload_slot& operator=(const offload_slot&) = delete;
};

/// op_vtable::offload of an operation type with an `offload_slot offload` member.
template <class Op>
offload_job* offload_of(op_base& op) noexcept {
  return &static_cast<Op&>(op).offload.job;
}

/// Queues `job` on the default pool of `ctx` (loop thread); `run` is called on the loop
/// when it is back. False when the queue is full (the job is untouched).
bool submit_offload(io_context& ctx, offload_job& job, void (*run)(remote_item&, io_context&) noexcept);

}  // namespace ringio::detail
