// SPDX-License-Identifier: Apache-2.0
#include "ringio/sync/event.hpp"

namespace ringio::detail {

event_core::event_core(event_mode m) noexcept : mode(m) {
  item.arg = this;
  item.run = [](remote_item& it, io_context&) noexcept {
    auto* c = static_cast<event_core*>(it.arg);
    c->wake_queued.store(false, std::memory_order_release);  // before looking at the state
    c->wake_waiters();
    c->release();
  };
}

void event_core::wake_waiters() noexcept {
  if (mode == event_mode::one_shot) {
    if (is_set.load(std::memory_order_acquire)) waiters.grant_all();
    return;
  }
  while (!waiters.empty()) {
    bool expected = true;
    if (!is_set.compare_exchange_strong(expected, false, std::memory_order_acq_rel)) return;
    if (!waiters.grant_one()) {
      is_set.store(true, std::memory_order_release);  // nobody could take it: keep it
      return;
    }
  }
}

void event_core::set() noexcept {
  // A waiter may see the event set the moment is_set is stored, and destroy it: this
  // call holds its own reference until its last access (handed to the wake-up item
  // when one is queued).
  refs.fetch_add(1, std::memory_order_relaxed);
  is_set.store(true, std::memory_order_release);
  // RACE: pairs with the fence in try_take (Dekker): either the waiter sees the event
  // set, or this thread sees the waiter's loop and wakes it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  io_context* loop = home.load(std::memory_order_acquire);
  if (loop == io_context::current()) {
    if (loop != nullptr) wake_waiters();
  } else if (loop != nullptr && !wake_queued.exchange(true, std::memory_order_acq_rel)) {
    loop->post_remote(item);  // the item owns this call's reference now
    return;
  }
  release();
}

bool event_core::try_take() {
  io_context* here = io_context::current();
  io_context* expected = nullptr;
  if (!home.compare_exchange_strong(expected, here, std::memory_order_acq_rel) && expected != here)
    throw std::logic_error("ringio: an event was awaited on a second loop");
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (mode == event_mode::one_shot) return is_set.load(std::memory_order_acquire);
  bool set_now = true;
  return is_set.compare_exchange_strong(set_now, false, std::memory_order_acq_rel);
}

}  // namespace ringio::detail
