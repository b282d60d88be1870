// SPDX-License-Identifier: Apache-2.0
// ringio/sync/detail/queued_op.hpp — the awaiter of every waiting call of the
// synchronisation primitives: an event operation (so stop tokens, with_timeout and the
// loop's shutdown apply) that first tries to take what it waits for without waiting.
#pragma once

#include <cerrno>
#include <coroutine>
#include <stop_token>
#include <type_traits>

#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/promise_base.hpp"
#include "ringio/sync/detail/waiter_list.hpp"

namespace ringio::detail {

extern const op_vtable queued_wait_vtable;

/// CRTP: Derived provides `bool try_now()` (take it at once, or false to wait) and
/// `waiter_list& queue()`; get_result() reads granted().
template <class Derived>
class queued_op : public io_operation<Derived> {
 public:
  queued_op() noexcept : io_operation<Derived>(&queued_wait_vtable, op_kind::event) { node_.op = this; }
  queued_op(const queued_op& o) noexcept : io_operation<Derived>(o) { node_.op = this; }
  queued_op& operator=(const queued_op&) = delete;
  ~queued_op() {
    if (node_.queued) static_cast<Derived*>(this)->queue().remove(node_);
  }

  bool await_ready() const noexcept { return false; }

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    const std::stop_token* inherited = this->inherited_token(h);
    // Stop before start takes nothing (a select's losing branch must not consume).
    if (this->finish_if_stopped(inherited)) return false;
    if (static_cast<Derived*>(this)->try_now()) {
      node_.granted = true;
      this->state = op_state::done;
      return false;
    }
    const bool suspended = this->token_.stop_possible() ? start_operation(*this, h, &this->token_, inherited)
                                                        : start_operation(*this, h, inherited);
    if (suspended) static_cast<Derived*>(this)->queue().push_back(node_);
    return suspended;
  }

 protected:
  /// After resumption: leaves the queue (a cancelled or timed-out waiter) and tells
  /// whether the wait was granted. A grant wins over a cancel that arrived later.
  bool granted() noexcept {
    if (node_.queued) static_cast<Derived*>(this)->queue().remove(node_);
    return node_.granted;
  }
  waiter_node node_;
};

/// A grant as result<void>: success, or the operation's error.
inline result<void> grant_result(bool granted, const op_base& op) noexcept {
  if (granted) return {};
  return unexpected(op_error(op));
}

}  // namespace ringio::detail
