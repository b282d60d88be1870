// ringio/channel.hpp — a bounded multi-producer, single-consumer channel between
// threads: senders on any thread, one receiving task on one loop. A send is lock-free
// and allocation-free; it wakes the receiver's loop only when the receiver is waiting
// (with a ring-to-ring message from another io_uring loop, else the loop's eventfd).
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <optional>
#include <stop_token>

#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/mpsc_ring.hpp"
#include "ringio/detail/remote_item.hpp"
#include "ringio/io_context.hpp"
#include "ringio/result.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/yield.hpp"

namespace ringio {

template <class T>
class channel;

namespace detail {

extern const op_vtable channel_wait_vtable;

/// Waits (as an event operation) until the channel may hold something.
class channel_wait_op : public io_operation<channel_wait_op> {
 public:
  channel_wait_op() noexcept : io_operation(&channel_wait_vtable, op_kind::event) {}
  result<void> get_result() const noexcept { return void_result(*this); }
};

/// The channel's receiver side that senders wake. Heap-allocated and shared (by count)
/// between the channel and a wake-up queued on the receiver's loop, so a channel may
/// be destroyed while its wake-up is still in the loop's inbox.
struct channel_waker {
  std::atomic<bool> waiting{false};   // the receiver is (about to be) suspended
  std::atomic<bool> wake_queued{false};
  std::atomic<unsigned> refs{1};      // the channel, plus one while the item is queued
  channel_wait_op* op = nullptr;       // loop thread only
  std::atomic<io_context*> ctx{nullptr};  // the receiver's loop (set before waiting)
  remote_item item;

  channel_waker() noexcept {
    item.arg = this;
    item.run = [](remote_item& it, io_context& loop) noexcept {
      auto* w = static_cast<channel_waker*>(it.arg);
      w->wake_queued.store(false, std::memory_order_release);  // before looking at op
      if (w->op != nullptr) loop.complete_event(*w->op, 0);
      w->release();
    };
  }
  void release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  /// Any thread, after a push. The item is queued at most once at a time: a receiver
  /// that waits again before it ran is completed by that same item.
  void notify() noexcept {
    // RACE: the push published the value with a release store; a release store
    // followed by a load of another variable may be reordered (x86 store buffer), so
    // without this fence the sender could read waiting == false while the receiver,
    // having set waiting, still reads the slot as empty: both miss each other. The
    // fence pairs with the one in receive() (Dekker's pattern).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!waiting.load(std::memory_order_relaxed)) return;
    if (!waiting.exchange(false)) return;
    io_context* target = ctx.load(std::memory_order_acquire);
    if (target == io_context::current()) {
      // The receiver's own loop: complete its wait directly (through the ready queue,
      // so the sender is not interrupted); nothing goes through the inbox.
      if (op != nullptr) target->complete_event_later(*op, 0);
      return;
    }
    if (wake_queued.exchange(true, std::memory_order_acq_rel)) return;
    refs.fetch_add(1, std::memory_order_relaxed);
    target->post_remote(item);
  }
};

}  // namespace detail

/// `capacity` is rounded up to a power of two. Destroy a channel only after its
/// senders have returned from their last send (join their threads, or finish their
/// tasks) and while no task waits in receive().
template <class T>
class channel {
 public:
  /// A channel holding up to `capacity` values (rounded up to a power of two).
  explicit channel(std::size_t capacity) : ring_(capacity), waker_(new detail::channel_waker) {}
  ~channel() { waker_->release(); }
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  /// Any thread: queues v, or returns false if the channel is full.
  bool try_send(T v) {
    if (!ring_.try_push(v)) return false;
    waker_->notify();
    return true;
  }

  /// Any ringio task: waits (by yielding, then sleeping briefly) while the channel is
  /// full. Fails only with operation_canceled (the task's stop token).
  task<result<void>> send(T v) {
    for (int spins = 0;; ++spins) {
      if (ring_.try_push(v)) {
        waker_->notify();
        co_return result<void>{};
      }
      if (spins < 16) {
        co_await yield();
      } else {
        auto s = co_await sleep_for(std::chrono::microseconds(50));
        if (!s) co_return unexpected(s.error());
      }
    }
  }

  /// The receiving task (one at a time, on one loop): the next value, or
  /// operation_canceled when `stop` or the task's own stop token is requested.
  task<result<T>> receive(std::stop_token stop = {}) {
    for (;;) {
      if (auto v = ring_.try_pop()) co_return std::move(*v);
      detail::channel_waker& w = *waker_;
      w.ctx.store(io_context::current(), std::memory_order_release);
      w.waiting.store(true, std::memory_order_relaxed);
      // RACE: pairs with the fence in notify(): a send that raced with us either sees
      // waiting or its value is seen here.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (auto v = ring_.try_pop()) {
        w.waiting.store(false);
        co_return std::move(*v);
      }
      detail::channel_wait_op op;
      if (stop.stop_possible()) op.set_stop_token(stop);
      w.op = &op;
      auto r = co_await op;
      w.op = nullptr;
      w.waiting.store(false);
      if (!r) co_return unexpected(r.error());
    }
  }

  /// Receiver side, without waiting.
  std::optional<T> try_receive() { return ring_.try_pop(); }

 private:
  detail::mpsc_ring<T> ring_;
  detail::channel_waker* waker_;
};

}  // namespace ringio
