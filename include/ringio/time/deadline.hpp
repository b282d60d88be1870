// SPDX-License-Identifier: Apache-2.0
// ringio/time/deadline.hpp — a deadline that one task waits for and any code on the
// same loop may move: the building block of idle timeouts without a watchdog loop.
//
// Moving it later is a plain store. The waiter stays armed for the time it last saw;
// when that time comes it compares with the current deadline and, if the deadline has
// moved, arms itself again for the new time instead of waking (lazy re-arming). So a
// connection that extends its deadline on every chunk it receives costs one clock read
// (vDSO) per chunk, and the waiting task runs at most once per timeout period. Moving
// the deadline earlier than the armed time wakes the waiter through the loop's ready
// queue so it can re-arm sooner. The waiter is an event operation of the loop: its
// time sits in the loop's deadline heap on every backend, with no kernel timer.
#pragma once

#include <chrono>
#include <cstdint>

#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio {

namespace detail {
class deadline_wait_op;
}

/// A resettable point in time (CLOCK_MONOTONIC). One task at a time awaits `wait()`;
/// the other members may be called from any code running on the waiter's loop (not
/// from other threads). A deadline must outlive its waiter.
class deadline {
 public:
  /// The clock of every deadline (CLOCK_MONOTONIC on Linux).
  using clock = std::chrono::steady_clock;

  /// A disarmed deadline: wait() waits until it is armed and that time passes.
  deadline() noexcept = default;
  /// A deadline armed at `at`.
  explicit deadline(clock::time_point at) noexcept;
  deadline(const deadline&) = delete;
  deadline& operator=(const deadline&) = delete;
  /// Destroying a deadline while a task waits on it is a bug (asserted).
  ~deadline();

  /// Arms the deadline at `at` (earlier or later than before; a time already past
  /// makes the waiter wake at once). No system call, no allocation; moving it earlier
  /// than the time the waiter armed queues one wake-up of the waiter on its loop.
  void reset(clock::time_point at) noexcept;
  /// Arms the deadline at now + `d` (a negative `d` counts as zero); the usual call
  /// of an idle timeout on activity. One clock read, otherwise as reset().
  void extend(std::chrono::nanoseconds d) noexcept;
  /// Disarms it: the deadline never passes until reset() or extend() arms it again;
  /// a waiter keeps waiting.
  void disarm() noexcept;
  /// Disarms it and ends the current wait (if any) with operation_canceled. A wait()
  /// started afterwards waits normally.
  void cancel() noexcept;

  /// Whether a time is set.
  [[nodiscard]] bool armed() const noexcept { return at_ns_ != 0; }
  /// Whether it is armed and its time has come.
  [[nodiscard]] bool expired() const noexcept;
  /// The time it is armed for; clock::time_point::max() when disarmed.
  [[nodiscard]] clock::time_point expiry() const noexcept;
  /// Whether a task is waiting on it now.
  [[nodiscard]] bool has_waiter() const noexcept { return waiter_ != nullptr; }

  /// Completes when the deadline passes: at once if it already has, never while it is
  /// disarmed. Ends with operation_canceled on a stop of the awaiting task's token, on
  /// cancel(), or when the loop shuts down. Only one task may wait at a time; the
  /// deadline keeps its time after the wait (call reset/extend to re-use it).
  [[nodiscard]] task<result<void>> wait();

 private:
  void kick() noexcept;

  std::int64_t at_ns_ = 0;  ///< CLOCK_MONOTONIC ns; 0 = disarmed
  detail::deadline_wait_op* waiter_ = nullptr;
  bool cancel_pending_ = false;
};

}  // namespace ringio
