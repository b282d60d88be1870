// SPDX-License-Identifier: Apache-2.0
// ringio/sync/barrier.hpp — N tasks meet: each arrives and waits until all N have
// arrived, then all continue and the barrier is ready for the next phase.
#pragma once

#include <cstddef>

#include "ringio/result.hpp"
#include "ringio/sync/detail/queued_op.hpp"

namespace ringio {

class barrier;

namespace detail {
class barrier_op : public queued_op<barrier_op> {
 public:
  explicit barrier_op(barrier& b) noexcept : b_(&b) {}
  bool try_now() noexcept;
  waiter_list& queue() noexcept;
  result<void> get_result() noexcept;

 private:
  barrier* b_;
  bool arrived_ = false;
  std::size_t phase_ = 0;  // the phase it arrived in
};
}  // namespace detail

/// A reusable barrier for `participants` tasks: arrive_and_wait() completes for all of
/// them once the last one arrives, and the next phase begins. Single-loop: use it from
/// tasks of one io_context's thread.
class barrier {
 public:
  /// A barrier for `participants` tasks per phase (at least 1).
  explicit barrier(std::size_t participants) noexcept
      : participants_(participants == 0 ? 1 : participants), remaining_(participants_) {}
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;

  /// Awaitable: arrives and waits for the phase to complete (the last arrival does not
  /// wait). Fails with operation_canceled on a stop of the awaiting task's token (or
  /// `.with_stop(t)`'s) before it starts or while it waits, and with timed_out under
  /// with_timeout: the arrival is then withdrawn, so the phase still needs a
  /// participant. If the phase completed before the stop took effect, it succeeds.
  [[nodiscard]] detail::barrier_op arrive_and_wait() noexcept { return detail::barrier_op(*this); }

  /// Phases completed so far.
  [[nodiscard]] std::size_t phase() const noexcept { return phase_; }
  /// Arrivals still missing in the current phase.
  [[nodiscard]] std::size_t remaining() const noexcept { return remaining_; }

 private:
  friend class detail::barrier_op;
  bool arrive() noexcept {
    if (--remaining_ > 0) return false;
    remaining_ = participants_;
    ++phase_;
    waiters_.grant_all();
    return true;
  }
  std::size_t participants_;
  std::size_t remaining_;
  std::size_t phase_ = 0;
  detail::waiter_list waiters_;
};

namespace detail {
// Arrives; the last arrival completes the phase and does not wait.
inline bool barrier_op::try_now() noexcept {
  arrived_ = true;
  phase_ = b_->phase_;
  return b_->arrive();
}
inline waiter_list& barrier_op::queue() noexcept { return b_->waiters_; }
inline result<void> barrier_op::get_result() noexcept {
  if (granted()) return {};
  // RACE: the phase may have completed (counting this arrival) after the stop or the
  // deadline took this waiter out: then it did pass the barrier.
  if (arrived_ && b_->phase_ != phase_) return {};
  if (arrived_) ++b_->remaining_;  // withdraws its arrival from the open phase
  return unexpected(op_error(*this));
}
}  // namespace detail

}  // namespace ringio
