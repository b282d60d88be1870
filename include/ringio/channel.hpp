// SPDX-License-Identifier: Apache-2.0
// ringio/channel.hpp — a bounded multi-producer, single-consumer channel between
// threads: senders on any thread, one receiving task on one loop. A send that finds
// room is lock-free and allocation-free; it wakes the receiver's loop only when the
// receiver is waiting (with a ring-to-ring message from another io_uring loop, else the
// loop's eventfd). A send that finds the channel full waits as an event operation until
// the receiver frees a slot and wakes it, on whatever loop it runs.
#pragma once

#include <atomic>
#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "ringio/detail/channel_senders.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/mpsc_ring.hpp"
#include "ringio/detail/promise_base.hpp"
#include "ringio/detail/remote_item.hpp"
#include "ringio/error.hpp"
#include "ringio/io_context.hpp"
#include "ringio/result.hpp"
#include "ringio/stop.hpp"
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
  std::atomic<bool> waiting{false};  // the receiver is (about to be) suspended
  std::atomic<bool> wake_queued{false};
  std::atomic<unsigned> refs{1};          // the channel, plus one while the item is queued
  channel_wait_op* op = nullptr;          // loop thread only
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

enum class push_outcome { pushed, full, closed };

/// A send waiting for room: under the senders' lock it tries once more, then queues.
template <class T>
class channel_send_op : public io_operation<channel_send_op<T>> {
 public:
  channel_send_op(channel<T>& ch, T& value) noexcept
      : io_operation<channel_send_op<T>>(&channel_wait_vtable, op_kind::event), ch_(&ch), value_(&value) {
    node_.op = this;
  }
  channel_send_op(const channel_send_op& o) noexcept
      : io_operation<channel_send_op<T>>(o), ch_(o.ch_), value_(o.value_) {
    node_.op = this;
  }

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h);
  /// true: the value went in; false: woken to try again; or the error.
  result<bool> get_result();
  /// After a cancelled wait: a wake from another thread still references this
  /// operation (it is queued on this loop); the operation must outlive it.
  [[nodiscard]] bool wake_in_flight() const noexcept { return wake_posted_ && !this->remote_cancel_seen; }

 private:
  channel<T>* ch_;
  T* value_;
  waiter_node node_;
  push_outcome outcome_ = push_outcome::full;
  bool wake_posted_ = false;
};

}  // namespace detail

/// A bounded channel: many senders (any thread), one receiving task at a time (on one
/// loop). `capacity` is rounded up to a power of two.
///
/// Closing: close() (or the destruction of the last channel::sender handle) makes
/// sends fail with errc::closed; the receiver still gets every value queued before,
/// then errc::closed. When the last sender handle closed it, nothing touches the
/// channel any more once the receiver has seen errc::closed: the receiver may destroy
/// it at once. After an explicit close(), sends and close() calls still in progress
/// never touch it after that either, but remaining sender handles do when they are
/// destroyed: the channel must outlive its handles. Without handles, destroy a channel
/// only after its senders have returned from their last send, and while no task waits
/// in receive().
template <class T>
class channel {
 public:
  /// A counted handle for sending: copies share the channel, and when the last handle
  /// made by make_sender() (or copied from one) is destroyed the channel closes, so the
  /// receiver learns that all senders are gone. The channel must outlive its handles.
  class sender {
   public:
    /// Another handle on the same channel.
    sender(const sender& o) noexcept : ch_(o.ch_) {
      if (ch_ != nullptr) ch_->handles_.fetch_add(1, std::memory_order_relaxed);
    }
    /// Takes over `o`'s share; `o` no longer counts.
    sender(sender&& o) noexcept : ch_(std::exchange(o.ch_, nullptr)) {}
    /// Drops this handle's share first, then shares `o`'s channel.
    sender& operator=(sender o) noexcept {
      std::swap(ch_, o.ch_);
      return *this;
    }
    /// The last handle closes the channel.
    ~sender() {
      if (ch_ != nullptr && ch_->handles_.fetch_sub(1, std::memory_order_acq_rel) == 1) ch_->close();
    }
    /// As channel::try_send.
    bool try_send(T v) { return ch_->try_send(std::move(v)); }
    /// As channel::send.
    task<result<void>> send(T v) { return ch_->send(std::move(v)); }

   private:
    friend class channel;
    explicit sender(channel* ch) noexcept : ch_(ch) {}
    channel* ch_;
  };

  /// A channel holding up to `capacity` values (rounded up to a power of two).
  explicit channel(std::size_t capacity) : ring_(capacity), waker_(new detail::channel_waker) {}
  ~channel() { waker_->release(); }
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  /// Any thread: queues v, or returns false if the channel is full or closed.
  bool try_send(T v) { return push(v) == detail::push_outcome::pushed; }

  /// Any ringio task: queues v, waiting while the channel is full. The wait is an
  /// event operation (no polling): the receiver wakes the oldest waiting sender when
  /// it frees a slot, on whichever loop or thread that sender runs. Fails with
  /// errc::closed when the channel is (or gets) closed, and with operation_canceled
  /// when the task's stop token is requested before the value went in (then the value
  /// was not sent).
  task<result<void>> send(T v) {
    // Counted as a push in progress until it returns (waiting included), so a receiver
    // that sees the channel closed and drained knows no send still touches it.
    active_.fetch_add(1, std::memory_order_seq_cst);
    const detail::push_outcome first = push_counted(v);
    result<void> out;
    if (first == detail::push_outcome::closed) {
      out = unexpected(errc::closed);
    } else if (first == detail::push_outcome::full) {
      for (;;) {
        detail::channel_send_op<T> op(*this, v);
        auto r = co_await op;
        // RACE: cancelled while a receiver on another thread was waking it; the wake's
        // item is already in this loop's inbox and runs within an iteration or two.
        while (op.wake_in_flight()) co_await yield();
        if (!r) {
          out = unexpected(r.error());
          break;
        }
        if (*r) break;
      }
    }
    end_push();  // the last access to the channel
    co_return out;
  }

  /// The receiving task (one at a time, on one loop): the next value; errc::closed
  /// once the channel is closed and drained; operation_canceled when `stop` or the
  /// task's own stop token is requested. A receive that is stopped never takes a
  /// value: in `when_any(a.receive(), b.receive())` the losing receive leaves its
  /// channel's values in place.
  task<result<T>> receive(std::stop_token stop = {}) {
    const std::stop_token inherited = co_await current_stop_token();
    for (unsigned finishing = 0;;) {
      if (stop.stop_requested() || inherited.stop_requested()) co_return unexpected(errno_code(-ECANCELED));
      if (auto v = pop()) co_return std::move(*v);
      if (drained()) co_return unexpected(errc::closed);
      if (closing()) {
        // Closed and empty, but a send or the close itself is still finishing (a few
        // instructions, or a woken sender on its way out): wait for it without
        // sleeping in the kernel for a wake that may not come.
        if (++finishing < 64) co_await yield();
        else (void)co_await sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      detail::channel_waker& w = *waker_;
      w.ctx.store(io_context::current(), std::memory_order_release);
      w.waiting.store(true, std::memory_order_relaxed);
      // RACE: pairs with the fence in notify(): a send (or close) that raced with us
      // either sees waiting or its effect is seen here.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (auto v = pop()) {
        w.waiting.store(false);
        co_return std::move(*v);
      }
      if (closed_.load(std::memory_order_seq_cst)) {
        w.waiting.store(false);
        continue;  // drained, or finishing: decided above
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

  /// Receiver side, without waiting: the next value, or nothing when empty.
  std::optional<T> try_receive() { return pop(); }

  /// Closes the channel: later sends fail with errc::closed, waiting senders are woken
  /// (and fail), and the receiver gets what is queued, then errc::closed. Any thread;
  /// closing twice does nothing more.
  void close() noexcept {
    // Counted as a push in progress: the receiver sees the channel drained only after
    // the last access below, so it may free the channel the moment it sees that.
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (!closed_.exchange(true, std::memory_order_seq_cst)) {
      senders_.wake_all();
      waker_->notify();
    }
    end_push();
  }

  /// True once close() was called (or the last sender handle went away).
  [[nodiscard]] bool is_closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  /// A counted sender handle (see channel::sender).
  [[nodiscard]] sender make_sender() noexcept {
    handles_.fetch_add(1, std::memory_order_relaxed);
    return sender(this);
  }

  /// Values queued: exact on the receiver's thread when no send is in progress, an
  /// approximate snapshot while other threads send.
  [[nodiscard]] std::size_t size() const noexcept { return ring_.size(); }

  /// The number of values it holds at most.
  [[nodiscard]] std::size_t capacity() const noexcept { return ring_.capacity(); }

 private:
  friend class detail::channel_send_op<T>;

  // Any thread. `active_` counts pushes in progress, so that a receiver that sees the
  // channel closed and empty knows no value is still on its way in.
  // The receiver is woken before the count drops (after it, the channel may be gone).
  detail::push_outcome push(T& v) {
    active_.fetch_add(1, std::memory_order_seq_cst);
    const detail::push_outcome out = push_counted(v);
    end_push();
    return out;
  }

  // A push by a caller already counted in `active_`.
  detail::push_outcome push_counted(T& v) {
    detail::push_outcome out = detail::push_outcome::closed;
    if (!closed_.load(std::memory_order_seq_cst))
      out = ring_.try_push(v) ? detail::push_outcome::pushed : detail::push_outcome::full;
    if (out == detail::push_outcome::pushed) waker_->notify();
    return out;
  }

  // Ends a push, a waiting send or a close: the last access to the channel, since a
  // receiver that then finds it closed and empty may destroy it at once.
  void end_push() noexcept { active_.fetch_sub(1, std::memory_order_seq_cst); }

  bool closing() const noexcept {
    return closed_.load(std::memory_order_seq_cst) && ring_.size() == 0 && active_.load(std::memory_order_seq_cst) != 0;
  }

  // Receiver: pops, then wakes a sender waiting for the slot just freed.
  std::optional<T> pop() {
    std::optional<T> v = ring_.try_pop();
    if (v) {
      // RACE: pairs with the fence in channel_send_op::await_suspend: a sender that
      // found no room is seen queued here, or sees this slot free there.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (senders_.waiting.load(std::memory_order_relaxed) > 0) senders_.wake_one();
    }
    return v;
  }

  bool drained() const noexcept {
    return closed_.load(std::memory_order_seq_cst) && active_.load(std::memory_order_seq_cst) == 0 && ring_.size() == 0;
  }

  detail::mpsc_ring<T> ring_;
  detail::channel_waker* waker_;
  detail::channel_senders senders_;
  std::atomic<bool> closed_{false};
  std::atomic<unsigned> active_{0};
  std::atomic<std::size_t> handles_{0};
};

namespace detail {

template <class T>
template <class P>
bool channel_send_op<T>::await_suspend(std::coroutine_handle<P> h) {
  const std::stop_token* inherited = this->inherited_token(h);
  if (this->finish_if_stopped(inherited)) return false;
  channel_senders& s = ch_->senders_;
  s.lock();
  s.waiting.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  outcome_ = ch_->push(*value_);
  if (outcome_ != push_outcome::full) {
    s.waiting.fetch_sub(1, std::memory_order_relaxed);
    s.unlock();
    this->state = op_state::done;
    return false;
  }
  bool suspended = false;
  try {
    suspended = this->token_.stop_possible() ? start_operation(*this, h, &this->token_, inherited)
                                             : start_operation(*this, h, inherited);
  } catch (...) {
    s.waiting.fetch_sub(1, std::memory_order_relaxed);
    s.unlock();
    throw;
  }
  if (suspended) s.enqueue(node_);
  else s.waiting.fetch_sub(1, std::memory_order_relaxed);
  s.unlock();
  return suspended;
}

template <class T>
result<bool> channel_send_op<T>::get_result() {
  if (outcome_ == push_outcome::pushed) return true;
  if (outcome_ == push_outcome::closed) return unexpected(errc::closed);
  channel_senders& s = ch_->senders_;
  s.lock();
  s.dequeue(node_);
  const bool woken = node_.granted;
  // A wake from another thread is posted under the lock, so it is visible here.
  wake_posted_ = woken && this->remote_cancel.load(std::memory_order_acquire);
  s.unlock();
  if (this->res >= 0) return false;  // woken: try again
  // RACE: woken, but cancelled before the wake arrived: pass the wake on so that the
  // slot freed for it is not left unclaimed.
  if (woken) s.wake_one();
  return unexpected(op_error(*this));
}

}  // namespace detail

}  // namespace ringio
