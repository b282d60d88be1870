// SPDX-License-Identifier: Apache-2.0
// host_fiber — the stack a simulated host runs on. The hosts of a world share one
// thread; each runs its program (its io_context's loop) on its own stack, and the
// world's scheduler switches between them only where a loop would wait, so every
// interleaving is a choice of the seed. ucontext keeps the core free of Boost; the
// switches tell the sanitizers and carry the thread's C++ exception state along.
#pragma once

#include <ucontext.h>

#include <cstddef>
#include <functional>

namespace ringio::detail {

class host_fiber {
 public:
  /// A fiber that will run `body` on a stack of `stack_bytes` (plus a guard page).
  host_fiber(std::function<void()> body, std::size_t stack_bytes);
  ~host_fiber();
  host_fiber(const host_fiber&) = delete;
  host_fiber& operator=(const host_fiber&) = delete;

  /// From the scheduler: runs the fiber until it suspends or its body returns.
  void resume();
  /// From inside the fiber: back to the scheduler, until the next resume().
  void suspend();
  /// Whether the body has returned (a finished fiber is never resumed).
  [[nodiscard]] bool finished() const noexcept { return finished_; }

 private:
  static void entry(unsigned hi, unsigned lo);
  enum class direction { in, out, last_out };
  void switch_stacks(direction d);

  std::function<void()> body_;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  void* stack_ = nullptr;
  std::size_t stack_bytes_ = 0;
  ucontext_t fiber_ctx_{};
  ucontext_t caller_ctx_{};
  const void* caller_bottom_ = nullptr;
  std::size_t caller_size_ = 0;
  void* eh_caught_ = nullptr;  // the other stack's C++ exception state
  unsigned int eh_uncaught_ = 0;
  void* tsan_fiber_ = nullptr;
  void* tsan_caller_ = nullptr;
  bool finished_ = false;
  bool started_ = false;
};

}  // namespace ringio::detail
