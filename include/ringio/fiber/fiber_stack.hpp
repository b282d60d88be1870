// SPDX-License-Identifier: Apache-2.0
// ringio/fiber/fiber_stack.hpp — one mmap'ed fiber stack with a guard page below it,
// taken from and given back to the calling thread's pool.
#pragma once

#include <cstddef>

namespace ringio {

/// @cond INTERNAL
namespace detail {

/// A stack for one fiber: `size()` usable bytes ending at `top()`, a PROT_NONE guard
/// page below. Move-only; the destructor hands it back to the thread's pool (or
/// unmaps it when the pool is full).
class fiber_stack {
 public:
  fiber_stack() noexcept = default;
  /// A stack of at least `usable` bytes: from the pool when one of that size waits
  /// there, else freshly mapped. Throws std::system_error when mmap(2) fails.
  static fiber_stack acquire(std::size_t usable);
  fiber_stack(fiber_stack&& o) noexcept;
  fiber_stack& operator=(fiber_stack&& o) noexcept;
  fiber_stack(const fiber_stack&) = delete;
  fiber_stack& operator=(const fiber_stack&) = delete;
  ~fiber_stack();

  [[nodiscard]] void* top() const noexcept { return static_cast<char*>(bottom_) + size_; }
  [[nodiscard]] void* bottom() const noexcept { return bottom_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  fiber_stack(void* bottom, std::size_t size) noexcept : bottom_(bottom), size_(size) {}
  void* bottom_ = nullptr;  // lowest usable byte; the guard page lies just below
  std::size_t size_ = 0;
};

}  // namespace detail
/// @endcond

}  // namespace ringio
