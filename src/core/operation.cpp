// SPDX-License-Identifier: Apache-2.0
// Starting, finishing and cancelling operations: the parts every backend shares.
#include <cerrno>
#include <stdexcept>

#include "core/loop_state.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {
namespace {

// Runs on the loop's thread after a stop callback fired on another thread.
void run_remote_cancel(remote_item& item, io_context& ctx) noexcept {
  op_base& op = *static_cast<op_base*>(item.arg);
  op.remote_cancel_seen = true;
  switch (op.state) {
    case op_state::done_deferred:
      // RACE: the operation finished while the request travelled; deliver it now.
      op.state = op_state::done;
      op.vt->complete(op);
      break;
    case op_state::in_flight:
    case op_state::backlogged:
      ctx.cancel(op);
      break;
    default:  // completing: its completion is already queued
      break;
  }
}

}  // namespace

void resume_waiter(op_base& op) noexcept { resume_inline(op.waiter); }

void stop_canceller::operator()() const noexcept {
  op_base& o = *op;
  if (io_context::current() == o.ctx) {
    o.ctx->cancel(o);
    return;
  }
  // Another thread: the ring belongs to the loop's thread, so hand the request over.
  // finish_operation() waits for this request before the operation may be destroyed.
  // With two tokens both callbacks may fire: the item is queued only once.
  if (o.remote_cancel.exchange(true, std::memory_order_acq_rel)) return;
  o.remote.run = &run_remote_cancel;
  o.remote.arg = &o;
  o.ctx->post_remote(o.remote);
}

bool start_operation(op_base& op, std::coroutine_handle<> h, const std::stop_token* token,
                     const std::stop_token* also) {
  io_context* ctx = io_context::current();
  if (ctx == nullptr) throw std::logic_error("ringio: an operation was awaited outside a running io_context");
  op.waiter = h;
  op.ctx = ctx;
  if (op.direct_owner != nullptr && op.direct_owner != ctx) {
    // A direct descriptor names a slot of its own loop's table: here the same number
    // is another connection (or nothing).
    op.res = -EXDEV;
    op.state = op_state::done;
    return false;
  }
  // Only operations made of steps can start one after a cancel of their fd.
  if (op.vt->step != nullptr && op.kind == op_kind::io && op.fd >= 0)
    op.fd_cancel_mark = ctx->cancel_mark(op.fd, op.fixed_file);
  if ((token != nullptr && token->stop_requested()) || (also != nullptr && also->stop_requested())) {
    // Stopped before it started: no SQE is sent.
    op.res = -ECANCELED;
    op.cancel_requested = true;
    op.state = op_state::done;
    return false;
  }
  if (ctx->start(op) && !(op.vt->step != nullptr && op.vt->step(op))) return false;
  // Registered after the start so that a callback firing right now finds the
  // operation in flight. Cancellation is always delivered later, never from here.
  if (token != nullptr && token->stop_possible()) op.register_stop(0, *token);
  if (also != nullptr && also->stop_possible()) op.register_stop(1, *also);
  return true;
}

void finish_operation(op_base& op) noexcept {
  op.ctx->state().counters.note_result(op);
  if (op.vt->step != nullptr && op.vt->step(op)) return;  // started its next step
  // Destroying the callback waits for a concurrent invocation on another thread, so
  // after this line remote_cancel tells whether a request is still queued.
  op.unregister_stops();
  if (op.remote_cancel.load(std::memory_order_acquire) && !op.remote_cancel_seen) {
    op.state = op_state::done_deferred;  // RACE: completes when the request is drained
    return;
  }
  op.state = op_state::done;
  op.vt->complete(op);
}

}  // namespace ringio::detail
