// SPDX-License-Identifier: Apache-2.0
// timer_heap — a binary min-heap of operations ordered by deadline_ns; each operation
// remembers its slot (heap_index, 1-based; 0 = not in the heap) so removal is O(log n).
#pragma once

#include <cstdint>
#include <vector>

#include "ringio/detail/op_base.hpp"

namespace ringio::detail {

class timer_heap {
 public:
  [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
  [[nodiscard]] op_base* top() const noexcept { return heap_.front(); }
  [[nodiscard]] std::size_t size() const noexcept { return heap_.size(); }

  void push(op_base& op) {
    heap_.push_back(&op);
    op.heap_index = static_cast<std::uint32_t>(heap_.size());
    sift_up(heap_.size() - 1);
  }

  void remove(op_base& op) noexcept {
    if (op.heap_index == 0) return;
    std::size_t i = op.heap_index - 1;
    op.heap_index = 0;
    op_base* last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    heap_[i] = last;
    last->heap_index = static_cast<std::uint32_t>(i + 1);
    sift_down(i);
    sift_up(i);
  }

 private:
  bool less(std::size_t a, std::size_t b) const noexcept { return heap_[a]->deadline_ns < heap_[b]->deadline_ns; }
  void swap_at(std::size_t a, std::size_t b) noexcept {
    std::swap(heap_[a], heap_[b]);
    heap_[a]->heap_index = static_cast<std::uint32_t>(a + 1);
    heap_[b]->heap_index = static_cast<std::uint32_t>(b + 1);
  }
  void sift_up(std::size_t i) noexcept {
    while (i > 0) {
      std::size_t parent = (i - 1) / 2;
      if (!less(i, parent)) return;
      swap_at(i, parent);
      i = parent;
    }
  }
  void sift_down(std::size_t i) noexcept {
    for (;;) {
      std::size_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < heap_.size() && less(l, m)) m = l;
      if (r < heap_.size() && less(r, m)) m = r;
      if (m == i) return;
      swap_at(i, m);
      i = m;
    }
  }

  std::vector<op_base*> heap_;
};

}  // namespace ringio::detail
