// SPDX-License-Identifier: Apache-2.0
// ringio/sync/detail/waiter_list.hpp — the FIFO of tasks waiting on a synchronisation
// primitive: an intrusive doubly linked list of nodes that live in the waiters' frames.
#pragma once

#include "ringio/detail/op_base.hpp"

namespace ringio::detail {

/// One waiting task: its event operation and its place in a primitive's queue.
struct waiter_node {
  waiter_node* next = nullptr;
  waiter_node* prev = nullptr;
  op_base* op = nullptr;
  bool queued = false;   ///< in a waiter_list
  bool granted = false;  ///< the primitive handed it what it waited for
};

/// Intrusive FIFO of waiter_node (one thread at a time).
class waiter_list {
 public:
  [[nodiscard]] bool empty() const noexcept { return head_ == nullptr; }
  void push_back(waiter_node& n) noexcept {
    n.next = nullptr;
    n.prev = tail_;
    (tail_ != nullptr ? tail_->next : head_) = &n;
    tail_ = &n;
    n.queued = true;
  }
  /// The oldest waiter, removed; nullptr when empty.
  waiter_node* pop_front() noexcept {
    waiter_node* n = head_;
    if (n != nullptr) remove(*n);
    return n;
  }
  void remove(waiter_node& n) noexcept {
    if (!n.queued) return;
    (n.prev != nullptr ? n.prev->next : head_) = n.next;
    (n.next != nullptr ? n.next->prev : tail_) = n.prev;
    n.next = n.prev = nullptr;
    n.queued = false;
  }
  /// The oldest waiter, left in place; nullptr when empty.
  [[nodiscard]] waiter_node* front() const noexcept { return head_; }
  /// Hands the oldest waiter a grant, or drops it when it is already completing
  /// (cancelled, timed out); returns whether it took the grant. Loop thread only.
  bool grant_front() noexcept;
  /// Hands the oldest waiter that can still take it a grant (its wait completes with
  /// success from the ready queue). Waiters already completing (cancelled, timed out)
  /// are dropped from the queue. Returns false when nobody took it. Loop thread only.
  bool grant_one() noexcept;
  /// Grants every waiter; returns how many took it.
  unsigned grant_all() noexcept {
    unsigned n = 0;
    while (!empty()) n += grant_one() ? 1 : 0;
    return n;
  }

 private:
  waiter_node* head_ = nullptr;
  waiter_node* tail_ = nullptr;
};

}  // namespace ringio::detail
