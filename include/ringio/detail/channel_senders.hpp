// SPDX-License-Identifier: Apache-2.0
// ringio/detail/channel_senders.hpp — the senders of a channel waiting for room, on any
// thread and any loop. Only a full channel gets here: the spin lock guards this slow
// path, never a send that finds room.
#pragma once

#include <atomic>
#include <cstddef>

#include "ringio/sync/detail/waiter_list.hpp"

namespace ringio::detail {

class channel_senders {
 public:
  /// Senders queued (read by the receiver after every pop).
  std::atomic<std::size_t> waiting{0};

  void lock() noexcept {
    while (flag_.test_and_set(std::memory_order_acquire))
      while (flag_.test(std::memory_order_relaxed)) {
      }
  }
  void unlock() noexcept { flag_.clear(std::memory_order_release); }

  /// With the lock held.
  void enqueue(waiter_node& n) noexcept { list_.push_back(n); }
  /// With the lock held: true if `n` was still queued (and now is not).
  bool dequeue(waiter_node& n) noexcept {
    if (!n.queued) return false;
    list_.remove(n);
    waiting.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  /// Wakes the oldest sender that can still be woken; any thread.
  void wake_one() noexcept;
  /// Wakes every queued sender (close); any thread.
  void wake_all() noexcept;

 private:
  bool wake_front_locked() noexcept;
  std::atomic_flag flag_;
  waiter_list list_;
};

}  // namespace ringio::detail
