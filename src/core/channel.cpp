// SPDX-License-Identifier: Apache-2.0
#include "ringio/channel.hpp"

namespace ringio::detail {

const op_vtable channel_wait_vtable = {
    .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};

namespace {

// Runs on a waiting sender's loop: completes its wait unless a cancel got there first.
void run_sender_wake(remote_item& item, io_context& loop) noexcept {
  op_base& op = *static_cast<op_base*>(item.arg);
  op.remote_cancel_seen = true;
  switch (op.state) {
    case op_state::done_deferred:  // finished (cancelled) while this item travelled
      op.state = op_state::done;
      op.vt->complete(op);
      break;
    case op_state::in_flight:
      loop.complete_event(op, 0);
      break;
    default:  // completing (cancel queued) or done: the sender passes the wake on
      break;
  }
}

// Completes a queued sender's wait, from any thread; false if it cannot be woken.
bool deliver_wake(op_base& op) noexcept {
  if (op.ctx == io_context::current()) return op.ctx->complete_event_later(op, 0);
  // Another thread: the operation's own cross-thread item carries the wake. If the
  // operation completes (cancelled) before the item ran, finish_operation() defers
  // its completion until then, or, when this exchange came after its check, the
  // sender sees the item pending (channel_send_op::wake_in_flight) and waits for it.
  // If a stop callback already queued the item, that cancel wins.
  if (op.remote_cancel.exchange(true, std::memory_order_acq_rel)) return false;
  op.remote.run = &run_sender_wake;
  op.remote.arg = &op;
  op.ctx->post_remote(op.remote);
  return true;
}

}  // namespace

bool channel_senders::wake_front_locked() noexcept {
  while (waiter_node* n = list_.pop_front()) {
    waiting.fetch_sub(1, std::memory_order_relaxed);
    n->granted = true;
    if (deliver_wake(*n->op)) return true;
    n->granted = false;
  }
  return false;
}

void channel_senders::wake_one() noexcept {
  lock();
  wake_front_locked();
  unlock();
}

void channel_senders::wake_all() noexcept {
  lock();
  while (wake_front_locked()) {
  }
  unlock();
}

}  // namespace ringio::detail
