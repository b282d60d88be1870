// SPDX-License-Identifier: Apache-2.0
// ringio/exec/inplace_stop_token.hpp — a stop source that allocates nothing (unlike
// std::stop_source, whose state is on the heap): when_all and when_any stop their
// children with one that lives in their operation state. Thread-safe: a stop may be
// requested, and callbacks registered or removed, from any thread.
#pragma once

#include <atomic>
#include <thread>
#include <utility>

#include "ringio/exec/tags.hpp"

namespace ringio::exec {

#if defined(RINGIO_EXEC_STDEXEC)
using inplace_stop_source = stdexec::inplace_stop_source;
using inplace_stop_token = stdexec::inplace_stop_token;
template <class F>
using inplace_stop_callback = stdexec::inplace_stop_callback<F>;
#else

class inplace_stop_token;
template <class F>
class inplace_stop_callback;

/// @cond INTERNAL
namespace detail {
struct inplace_callback_base {
  void (*run)(inplace_callback_base*) noexcept = nullptr;
  inplace_callback_base* next = nullptr;
  inplace_callback_base** prev = nullptr;  // null: not in the list
  bool* removed_while_running = nullptr;
  std::atomic<bool> finished{false};
};
}  // namespace detail
/// @endcond

/// The source of inplace_stop_tokens; not movable (tokens point to it). It must outlive
/// its tokens and callbacks.
class inplace_stop_source {
 public:
  inplace_stop_source() noexcept = default;
  inplace_stop_source(const inplace_stop_source&) = delete;
  inplace_stop_source& operator=(const inplace_stop_source&) = delete;

  /// A token observing this source.
  [[nodiscard]] inplace_stop_token get_token() const noexcept;
  /// Whether a stop was requested.
  [[nodiscard]] bool stop_requested() const noexcept { return requested_.load(std::memory_order_acquire); }
  /// Requests a stop and runs the registered callbacks on this thread; false if a stop
  /// had been requested already.
  bool request_stop() noexcept {
    lock();
    if (requested_.load(std::memory_order_relaxed)) {
      unlock();
      return false;
    }
    requested_.store(true, std::memory_order_release);
    notifier_ = std::this_thread::get_id();
    while (head_ != nullptr) {
      detail::inplace_callback_base* cb = head_;
      head_ = cb->next;
      if (head_ != nullptr) head_->prev = &head_;
      cb->prev = nullptr;
      bool removed = false;
      cb->removed_while_running = &removed;
      unlock();
      cb->run(cb);
      if (!removed) {
        cb->removed_while_running = nullptr;
        cb->finished.store(true, std::memory_order_release);
      }
      lock();
    }
    unlock();
    return true;
  }

  /// @cond INTERNAL
  // Registers `cb`, or runs it now if a stop was requested already.
  void add(detail::inplace_callback_base* cb) const noexcept {
    lock();
    if (requested_.load(std::memory_order_relaxed)) {
      unlock();
      cb->run(cb);
      cb->finished.store(true, std::memory_order_release);
      return;
    }
    cb->next = head_;
    cb->prev = &head_;
    if (head_ != nullptr) head_->prev = &cb->next;
    head_ = cb;
    unlock();
  }
  // Unregisters `cb`; waits for it if it is running on another thread.
  void remove(detail::inplace_callback_base* cb) const noexcept {
    lock();
    if (cb->prev != nullptr) {
      *cb->prev = cb->next;
      if (cb->next != nullptr) cb->next->prev = cb->prev;
      cb->prev = nullptr;
      unlock();
      return;
    }
    const bool on_notifier = requested_.load(std::memory_order_relaxed) && notifier_ == std::this_thread::get_id();
    unlock();
    if (on_notifier) {  // removed from inside its own run (or after it ran, here)
      if (cb->removed_while_running != nullptr) *cb->removed_while_running = true;
      return;
    }
    while (requested_.load(std::memory_order_acquire) && !cb->finished.load(std::memory_order_acquire))
      std::this_thread::yield();
  }
  /// @endcond

 private:
  void lock() const noexcept {
    while (lock_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() const noexcept { lock_.store(false, std::memory_order_release); }

  mutable std::atomic<bool> lock_{false};
  std::atomic<bool> requested_{false};
  mutable detail::inplace_callback_base* head_ = nullptr;
  std::thread::id notifier_;
};

/// Observes an inplace_stop_source; a default-constructed token can never stop.
class inplace_stop_token {
 public:
  /// The callback type registered on such a token.
  template <class F>
  using callback_type = inplace_stop_callback<F>;

  inplace_stop_token() noexcept = default;
  /// Whether a stop was requested.
  [[nodiscard]] bool stop_requested() const noexcept { return src_ != nullptr && src_->stop_requested(); }
  /// Whether a stop may ever be requested.
  [[nodiscard]] bool stop_possible() const noexcept { return src_ != nullptr; }
  /// Same source.
  friend bool operator==(const inplace_stop_token&, const inplace_stop_token&) noexcept = default;

 private:
  friend class inplace_stop_source;
  template <class F>
  friend class inplace_stop_callback;
  explicit inplace_stop_token(const inplace_stop_source* s) noexcept : src_(s) {}
  const inplace_stop_source* src_ = nullptr;
};

inline inplace_stop_token inplace_stop_source::get_token() const noexcept { return inplace_stop_token(this); }

/// Runs `F` once when the token's source is stopped (at once if it already was), unless
/// destroyed before; the destructor waits for a run in progress on another thread.
template <class F>
class inplace_stop_callback : detail::inplace_callback_base {
 public:
  /// Registers `f` on `t`'s source (nothing if the token can never stop).
  template <class Init>
  inplace_stop_callback(inplace_stop_token t, Init&& f) noexcept : fn_(std::forward<Init>(f)), src_(t.src_) {
    run = [](detail::inplace_callback_base* b) noexcept { static_cast<inplace_stop_callback*>(b)->fn_(); };
    if (src_ != nullptr) src_->add(this);
  }
  ~inplace_stop_callback() {
    if (src_ != nullptr) src_->remove(this);
  }
  inplace_stop_callback(const inplace_stop_callback&) = delete;
  inplace_stop_callback& operator=(const inplace_stop_callback&) = delete;

 private:
  F fn_;
  const inplace_stop_source* src_;
};

#endif

}  // namespace ringio::exec
