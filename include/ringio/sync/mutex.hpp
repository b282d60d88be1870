// SPDX-License-Identifier: Apache-2.0
// ringio/sync/mutex.hpp — an asynchronous mutex for the tasks of one loop: waiting
// tasks queue in FIFO order and unlock() hands the lock straight to the oldest one.
#pragma once

#include <utility>

#include "ringio/result.hpp"
#include "ringio/sync/detail/queued_op.hpp"

namespace ringio {

class mutex;

/// Owns a locked ringio::mutex and unlocks it when destroyed (movable, not copyable).
class scoped_lock {
 public:
  /// An empty guard that owns nothing.
  scoped_lock() noexcept = default;
  /// Adopts a lock the caller holds on `m`.
  explicit scoped_lock(mutex& m) noexcept : m_(&m) {}
  /// Takes over the lock of `o`, which then owns nothing.
  scoped_lock(scoped_lock&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  /// Unlocks what it owns, then takes over the lock of `o`.
  scoped_lock& operator=(scoped_lock&& o) noexcept {
    if (this != &o) {
      unlock();
      m_ = std::exchange(o.m_, nullptr);
    }
    return *this;
  }
  ~scoped_lock() { unlock(); }
  scoped_lock(const scoped_lock&) = delete;
  scoped_lock& operator=(const scoped_lock&) = delete;

  /// Unlocks now (hands the mutex to the next waiter); later calls do nothing.
  void unlock() noexcept;
  /// True while it owns a lock.
  [[nodiscard]] bool owns_lock() const noexcept { return m_ != nullptr; }
  /// Gives up ownership without unlocking; returns the mutex (or nullptr).
  mutex* release() noexcept { return std::exchange(m_, nullptr); }

 private:
  mutex* m_ = nullptr;
};

namespace detail {
class mutex_lock_op : public queued_op<mutex_lock_op> {
 public:
  explicit mutex_lock_op(mutex& m) noexcept : m_(&m) {}
  bool try_now() noexcept;
  waiter_list& queue() noexcept;
  result<scoped_lock> get_result() noexcept {
    if (granted()) return scoped_lock(*m_);
    return unexpected(op_error(*this));
  }

 private:
  mutex* m_;
};
}  // namespace detail

/// An asynchronous mutex: `auto guard = co_await m.lock();`. No thread ever blocks: a
/// task that finds it locked is suspended in a FIFO queue, and unlock() hands the lock
/// to the oldest waiter directly (no barging). Single-loop: lock and unlock only from
/// tasks of one io_context's thread; it uses no atomics and no locks.
class mutex {
 public:
  mutex() = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  /// Awaitable: locks, waiting in line if needed, and gives a guard that unlocks. Fails
  /// with operation_canceled when the awaiting task's stop token (or one given with
  /// `.with_stop(t)`) is requested while it waits or before it starts, and with
  /// timed_out under with_timeout: the waiter leaves the queue and holds nothing. A
  /// stop that arrives after the lock was handed over loses: the lock is reported as
  /// acquired.
  [[nodiscard]] detail::mutex_lock_op lock() noexcept { return detail::mutex_lock_op(*this); }

  /// Locks if it is free and nobody waits; never suspends.
  [[nodiscard]] bool try_lock() noexcept {
    if (locked_) return false;
    locked_ = true;
    return true;
  }

  /// Unlocks: the oldest waiter (if any) becomes the owner and resumes later from the
  /// loop's ready queue. Call only while locked.
  void unlock() noexcept {
    if (!waiters_.grant_one()) locked_ = false;
  }

  /// True while some task owns it.
  [[nodiscard]] bool is_locked() const noexcept { return locked_; }

 private:
  friend class detail::mutex_lock_op;
  bool locked_ = false;
  detail::waiter_list waiters_;
};

inline void scoped_lock::unlock() noexcept {
  if (m_ != nullptr) std::exchange(m_, nullptr)->unlock();
}

namespace detail {
inline bool mutex_lock_op::try_now() noexcept { return m_->try_lock(); }
inline waiter_list& mutex_lock_op::queue() noexcept { return m_->waiters_; }
}  // namespace detail

}  // namespace ringio
