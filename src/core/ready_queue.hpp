// SPDX-License-Identifier: Apache-2.0
// ready_queue — FIFO of work the loop runs next: coroutines to resume and operations
// whose result is known. A ring buffer that only grows, so steady state never allocates.
#pragma once

#include <coroutine>
#include <cstddef>
#include <vector>

#include "ringio/detail/op_base.hpp"

namespace ringio::detail {

class ready_queue {
 public:
  struct entry {
    void* ptr = nullptr;
    bool is_op = false;
  };

  ready_queue() : buf_(64) {}

  void push(std::coroutine_handle<> h) { push_entry({h.address(), false}); }
  void push(op_base& op) { push_entry({&op, true}); }

  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  entry pop() noexcept {
    entry e = buf_[head_];
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
    return e;
  }

 private:
  void push_entry(entry e) {
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) & (buf_.size() - 1)] = e;
    ++size_;
  }
  void grow() {
    std::vector<entry> bigger(buf_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
    buf_.swap(bigger);
    head_ = 0;
  }

  std::vector<entry> buf_;  // size is a power of two
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace ringio::detail
