// SPDX-License-Identifier: Apache-2.0
// ringio/sync/wait_group.hpp — counts outstanding work (add/done) and lets tasks wait
// until it reaches zero, as Go's sync.WaitGroup.
#pragma once

#include <cstddef>

#include "ringio/result.hpp"
#include "ringio/sync/detail/queued_op.hpp"

namespace ringio {

class wait_group;

namespace detail {
class wait_group_op : public queued_op<wait_group_op> {
 public:
  explicit wait_group_op(wait_group& g) noexcept : g_(&g) {}
  bool try_now() noexcept;
  waiter_list& queue() noexcept;
  result<void> get_result() noexcept { return grant_result(granted(), *this); }

 private:
  wait_group* g_;
};
}  // namespace detail

/// A counter of outstanding work: add(n) before starting work, done() when each piece
/// finishes, `co_await wait()` until the count is zero. Single-loop: use it from tasks
/// of one io_context's thread.
class wait_group {
 public:
  wait_group() = default;
  wait_group(const wait_group&) = delete;
  wait_group& operator=(const wait_group&) = delete;

  /// Adds `n` pieces of outstanding work.
  void add(std::size_t n = 1) noexcept { count_ += n; }

  /// One piece finished; at zero every waiter is released. Call it no more often than
  /// add() counted.
  void done() noexcept {
    if (count_ > 0 && --count_ == 0) waiters_.grant_all();
  }

  /// Awaitable: completes when the count is zero (at once if it is). Fails with
  /// operation_canceled on a stop of the awaiting task's token (or `.with_stop(t)`'s),
  /// and with timed_out under with_timeout; the count is not changed either way.
  [[nodiscard]] detail::wait_group_op wait() noexcept { return detail::wait_group_op(*this); }

  /// The outstanding count.
  [[nodiscard]] std::size_t count() const noexcept { return count_; }

 private:
  friend class detail::wait_group_op;
  std::size_t count_ = 0;
  detail::waiter_list waiters_;
};

namespace detail {
inline bool wait_group_op::try_now() noexcept { return g_->count_ == 0; }
inline waiter_list& wait_group_op::queue() noexcept { return g_->waiters_; }
}  // namespace detail

}  // namespace ringio
