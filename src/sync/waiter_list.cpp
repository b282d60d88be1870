// SPDX-License-Identifier: Apache-2.0
#include "ringio/io_context.hpp"
#include "ringio/sync/detail/queued_op.hpp"

namespace ringio::detail {

const op_vtable queued_wait_vtable = {
    .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};

bool waiter_list::grant_front() noexcept {
  waiter_node* n = pop_front();
  if (n == nullptr) return false;
  // RACE: a waiter whose stop or deadline already fired is completing with an error
  // (no longer in flight): it cannot take the grant.
  if (!n->op->ctx->complete_event_later(*n->op, 0)) return false;
  n->granted = true;
  return true;
}

bool waiter_list::grant_one() noexcept {
  while (!empty())
    if (grant_front()) return true;  // otherwise the next one may take it
  return false;
}

}  // namespace ringio::detail
