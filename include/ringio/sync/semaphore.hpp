// SPDX-License-Identifier: Apache-2.0
// ringio/sync/semaphore.hpp — a counting semaphore for the tasks of one loop, with a
// FIFO queue of waiters.
#pragma once

#include <cstddef>

#include "ringio/result.hpp"
#include "ringio/sync/detail/queued_op.hpp"

namespace ringio {

class semaphore;

namespace detail {
class semaphore_acquire_op : public queued_op<semaphore_acquire_op> {
 public:
  explicit semaphore_acquire_op(semaphore& s) noexcept : s_(&s) {}
  bool try_now() noexcept;
  waiter_list& queue() noexcept;
  result<void> get_result() noexcept { return grant_result(granted(), *this); }

 private:
  semaphore* s_;
};
}  // namespace detail

/// A counting semaphore: acquire() takes one permit, waiting in FIFO order while none
/// is free; release(n) gives permits back, handing them to waiters first. Single-loop:
/// use it from tasks of one io_context's thread (no atomics, no locks).
class semaphore {
 public:
  /// A semaphore with `initial` free permits.
  explicit semaphore(std::size_t initial) noexcept : count_(initial) {}
  semaphore(const semaphore&) = delete;
  semaphore& operator=(const semaphore&) = delete;

  /// Awaitable: takes one permit (result<void>). Fails with operation_canceled when the
  /// awaiting task's stop token (or `.with_stop(t)`'s) is requested before it starts or
  /// while it waits, and with timed_out under with_timeout; a failed acquire holds no
  /// permit. A permit handed over before the stop is kept: the acquire succeeds.
  [[nodiscard]] detail::semaphore_acquire_op acquire() noexcept { return detail::semaphore_acquire_op(*this); }

  /// Takes a permit if one is free and nobody waits; never suspends.
  [[nodiscard]] bool try_acquire() noexcept {
    if (count_ == 0 || !waiters_.empty()) return false;
    --count_;
    return true;
  }

  /// Returns `n` permits: each goes to the oldest waiter still waiting, the rest
  /// become free.
  void release(std::size_t n = 1) noexcept {
    while (n > 0 && waiters_.grant_one()) --n;
    count_ += n;
  }

  /// Free permits now.
  [[nodiscard]] std::size_t available() const noexcept { return count_; }

 private:
  friend class detail::semaphore_acquire_op;
  std::size_t count_;
  detail::waiter_list waiters_;
};

namespace detail {
inline bool semaphore_acquire_op::try_now() noexcept { return s_->try_acquire(); }
inline waiter_list& semaphore_acquire_op::queue() noexcept { return s_->waiters_; }
}  // namespace detail

}  // namespace ringio
