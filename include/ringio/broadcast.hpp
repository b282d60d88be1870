// SPDX-License-Identifier: Apache-2.0
// ringio/broadcast.hpp — one sender, many receivers: every receiver sees every value
// sent after it subscribed, through its own cursor over a ring of the last `capacity`
// values. The sender never waits: a receiver that falls more than `capacity` values
// behind is told how many it missed (errc::lagged) and continues from the oldest value
// still held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ringio/error.hpp"
#include "ringio/result.hpp"
#include "ringio/sync/detail/queued_op.hpp"
#include "ringio/task.hpp"

namespace ringio {

template <class T>
class broadcast;

namespace detail {
/// Waits until a receiver at `cursor` has something to take (a value, a lag or the end).
template <class T>
class broadcast_wait_op : public queued_op<broadcast_wait_op<T>> {
 public:
  broadcast_wait_op(broadcast<T>& b, std::uint64_t cursor) noexcept : b_(&b), cursor_(cursor) {}
  bool try_now() noexcept { return b_->sent_ != cursor_ || b_->closed_; }
  waiter_list& queue() noexcept { return b_->waiters_; }
  result<void> get_result() noexcept { return grant_result(this->granted(), *this); }

 private:
  broadcast<T>* b_;
  std::uint64_t cursor_;
};
}  // namespace detail

/// A single-loop broadcast channel: send() and every receiver on one io_context's
/// thread (no atomics, no locks). Each value is copied into its slot once and copied
/// out to each receiver, so for big messages send a std::shared_ptr. No allocation per
/// send or receive once the slots hold values (the ring is allocated up front).
///
/// Lag policy: the ring keeps the last `capacity` values. A receiver whose next value
/// was overwritten gets errc::lagged once; receiver::missed() then says how many values
/// it lost, and its next receive() continues with the oldest value still held.
///
/// Destroy a broadcast only when no task waits in receive(); receivers must not be
/// used after it is gone.
template <class T>
class broadcast {
 public:
  /// One subscriber's cursor. Movable; create with broadcast::subscribe().
  class receiver {
   public:
    /// The next value; errc::lagged when values were overwritten before this receiver
    /// took them (see missed(); the next call continues with the oldest value held);
    /// errc::closed once the broadcast is closed and everything held was taken;
    /// operation_canceled when the awaiting task's stop token is requested while it
    /// waits or before it starts (then nothing is taken: safe in when_any).
    task<result<T>> receive() {
      for (;;) {
        auto ready = co_await detail::broadcast_wait_op<T>(*b_, cursor_);
        if (!ready) co_return unexpected(ready.error());
        auto got = try_receive();
        if (got) co_return std::move(*got);
        if (got.error() != std::errc::resource_unavailable_try_again) co_return unexpected(got.error());
      }
    }

    /// Without waiting: the next value, errc::lagged, errc::closed, or
    /// std::errc::resource_unavailable_try_again when nothing new was sent.
    result<T> try_receive() {
      const std::uint64_t held = b_->slots_.size();
      if (b_->sent_ - cursor_ > held) {
        missed_ = b_->sent_ - held - cursor_;
        cursor_ = b_->sent_ - held;
        return unexpected(errc::lagged);
      }
      if (cursor_ != b_->sent_) return *b_->slots_[cursor_++ % held];
      if (b_->closed_) return unexpected(errc::closed);
      return unexpected(std::errc::resource_unavailable_try_again);
    }

    /// How many values the last errc::lagged skipped.
    [[nodiscard]] std::uint64_t missed() const noexcept { return missed_; }
    /// Values sent that this receiver has not taken yet (may exceed the capacity).
    [[nodiscard]] std::uint64_t pending() const noexcept { return b_->sent_ - cursor_; }

   private:
    friend class broadcast;
    receiver(broadcast& b, std::uint64_t cursor) noexcept : b_(&b), cursor_(cursor) {}
    broadcast* b_;
    std::uint64_t cursor_;
    std::uint64_t missed_ = 0;
  };

  /// A broadcast keeping the last `capacity` values (at least 1).
  explicit broadcast(std::size_t capacity) : slots_(capacity == 0 ? 1 : capacity) {}
  broadcast(const broadcast&) = delete;
  broadcast& operator=(const broadcast&) = delete;

  /// A receiver that will see the values sent from now on.
  [[nodiscard]] receiver subscribe() noexcept { return receiver(*this, sent_); }

  /// Stores `v` for every receiver and wakes those waiting; never waits (a slow
  /// receiver loses the oldest values instead). Fails with errc::closed after close().
  result<void> send(T v) {
    if (closed_) return unexpected(errc::closed);
    slots_[sent_ % slots_.size()] = std::move(v);
    ++sent_;
    waiters_.grant_all();
    return {};
  }

  /// Ends the stream: sends fail from now on, receivers take what is held and then
  /// get errc::closed.
  void close() noexcept {
    closed_ = true;
    waiters_.grant_all();
  }

  /// The number of values held for slow receivers.
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }
  /// Values sent so far.
  [[nodiscard]] std::uint64_t sent() const noexcept { return sent_; }
  /// True after close().
  [[nodiscard]] bool is_closed() const noexcept { return closed_; }

 private:
  friend class detail::broadcast_wait_op<T>;
  std::vector<std::optional<T>> slots_;
  std::uint64_t sent_ = 0;
  bool closed_ = false;
  detail::waiter_list waiters_;
};

}  // namespace ringio
