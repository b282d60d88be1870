// SPDX-License-Identifier: Apache-2.0
// op_wait_list — the operations waiting for one direction of one descriptor in a
// readiness backend, oldest first, linked through op_base::next/prev (no allocation).
#pragma once

#include "ringio/detail/op_base.hpp"

namespace ringio::detail {

struct op_wait_list {
  op_base* head = nullptr;
  op_base* tail = nullptr;

  void push(op_base& op) noexcept {
    op.next = nullptr;
    op.prev = tail;
    (tail != nullptr ? tail->next : head) = &op;
    tail = &op;
  }
  void unlink(op_base& op) noexcept {
    (op.prev != nullptr ? op.prev->next : head) = op.next;
    (op.next != nullptr ? op.next->prev : tail) = op.prev;
    op.next = op.prev = nullptr;
  }
};

}  // namespace ringio::detail
