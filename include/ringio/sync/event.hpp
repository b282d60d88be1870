// SPDX-License-Identifier: Apache-2.0
// ringio/sync/event.hpp — an event tasks wait for: one-shot (stays set and releases
// every waiter) or auto-reset (each set releases one waiter, or is kept for the next
// wait). set() may come from any thread; the waiters live on one loop.
#pragma once

#include <atomic>
#include <stdexcept>

#include "ringio/detail/remote_item.hpp"
#include "ringio/io_context.hpp"
#include "ringio/result.hpp"
#include "ringio/sync/detail/queued_op.hpp"

namespace ringio {

/// What a set() of an ringio::event does.
enum class event_mode {
  one_shot,    ///< stays set until reset(); releases every waiter, now and later
  auto_reset,  ///< releases one waiter, or is kept for the next wait, then clears
};

namespace detail {

/// The state of an event, shared (by count) with a wake-up queued on the waiters' loop.
struct event_core {
  explicit event_core(event_mode m) noexcept;
  std::atomic<bool> is_set{false};
  std::atomic<io_context*> home{nullptr};  // the loop the waiters are on
  std::atomic<bool> wake_queued{false};
  std::atomic<unsigned> refs{1};
  const event_mode mode;
  waiter_list waiters;  // home loop only
  remote_item item;

  void release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  void set() noexcept;
  /// Home loop: hands the set state to waiters.
  void wake_waiters() noexcept;
  /// Waiter side: binds the home loop, then takes the event if it is set.
  bool try_take();
};

class event_wait_op : public queued_op<event_wait_op> {
 public:
  explicit event_wait_op(event_core& c) noexcept : c_(&c) {}
  bool try_now() { return c_->try_take(); }
  waiter_list& queue() noexcept { return c_->waiters; }
  result<void> get_result() noexcept { return grant_result(granted(), *this); }

 private:
  event_core* c_;
};

}  // namespace detail

/// An event for tasks. Waits happen on one loop (the first wait binds it; a wait from
/// another loop throws std::logic_error); set() and reset() are safe from any thread
/// and any loop: from another thread the waiters' loop is woken through its inbox (a
/// ring message or its eventfd), as channel senders wake a receiver. Destroy it only
/// while no task waits on it: a waiter released by a set() from another thread may
/// destroy it at once (that set() keeps the shared state alive until it returns).
class event {
 public:
  /// An unset event of the given mode.
  explicit event(event_mode mode = event_mode::one_shot) : core_(new detail::event_core(mode)) {}
  ~event() { core_->release(); }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  /// Sets it. One-shot: every waiter is released, and waits complete at once until
  /// reset(). Auto-reset: the oldest waiter is released and the event clears; with no
  /// waiter it stays set until one wait takes it. Any thread.
  void set() noexcept { core_->set(); }

  /// Clears it (waiters keep waiting). Any thread.
  void reset() noexcept { core_->is_set.store(false, std::memory_order_release); }

  /// True while it is set (a snapshot when other threads set it).
  [[nodiscard]] bool is_set() const noexcept { return core_->is_set.load(std::memory_order_acquire); }

  /// Awaitable: completes when the event is set (at once if it is; an auto-reset event
  /// is cleared by the wait that takes it). Fails with operation_canceled on a stop of
  /// the awaiting task's token (or `.with_stop(t)`'s) before it starts or while it
  /// waits, and with timed_out under with_timeout; a cancelled wait of an auto-reset
  /// event never consumes a set. Throws std::logic_error when awaited on a different
  /// loop than earlier waits.
  [[nodiscard]] detail::event_wait_op wait() noexcept { return detail::event_wait_op(*core_); }

 private:
  detail::event_core* core_;
};

}  // namespace ringio
