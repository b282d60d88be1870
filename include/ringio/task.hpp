// SPDX-License-Identifier: Apache-2.0
// ringio/task.hpp — task<T>: a lazy coroutine that starts when awaited and hands control
// back to its awaiter when it finishes. Both hand-overs go through the resumption loop
// (detail/resume_loop.hpp), so chains of synchronous co_awaits use no stack, at any
// optimisation level.
#pragma once

#include <cassert>
#include <coroutine>
#include <exception>
#include <new>
#include <utility>

#include "ringio/detail/promise_base.hpp"

namespace ringio {

template <class T = void>
class task;

namespace detail {

template <class T>
class task_promise : public promise_base {
 public:
  task<T> get_return_object() noexcept;
  template <class U>
  void return_value(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    ::new (static_cast<void*>(&storage_)) T(std::forward<U>(v));
    has_value_ = true;
  }
  ~task_promise() {
    if (has_value_) value_ptr()->~T();
  }
  T take() {
    rethrow_if_failed();
    assert(has_value_);
    return std::move(*value_ptr());
  }
  /// The value returned, not yet taken; null if the task threw (or has not finished).
  const T* peek() const noexcept { return has_value_ ? std::launder(reinterpret_cast<const T*>(&storage_)) : nullptr; }

 private:
  T* value_ptr() noexcept { return std::launder(reinterpret_cast<T*>(&storage_)); }
  alignas(T) unsigned char storage_[sizeof(T)];
  bool has_value_ = false;
};

template <>
class task_promise<void> : public promise_base {
 public:
  task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() { rethrow_if_failed(); }
};

}  // namespace detail

/// A lazily started coroutine producing a T (or an exception). Await it once:
/// `T v = co_await make_value();`. A task that is never awaited is destroyed unstarted.
/// The awaiting task's implicit stop token (see stop.hpp) is handed down to the child.
template <class T>
class [[nodiscard]] task {
 public:
  using promise_type = detail::task_promise<T>;             ///< The coroutine's promise.
  using handle_type = std::coroutine_handle<promise_type>;  ///< The coroutine's handle.
  using value_type = T;                                     ///< What co_await gives.

  /// No coroutine (valid() is false).
  task() noexcept = default;
  /// Owns `h` (made by the coroutine machinery).
  explicit task(handle_type h) noexcept : h_(h) {}
  /// Moves ownership of the coroutine; a task is not copyable.
  ///@{
  task(task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  task& operator=(task&& o) noexcept {
    if (this != &o) {
      destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  ///@}
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { destroy(); }

  /// Whether it owns a coroutine.
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(h_); }

  /// @cond INTERNAL
  struct awaiter {
    handle_type h;
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
      h.promise().set_continuation(parent);
      if constexpr (std::is_base_of_v<detail::promise_base, P>) h.promise().inherit_from(parent.promise());
      return detail::hand_over(parent.address(), h);
    }
    T await_resume() { return h.promise().take(); }
  };
  /// @endcond
  /// Starts the task and resumes the awaiting coroutine with its value (or rethrows
  /// its exception). A task can be awaited once. The child inherits the awaiting
  /// task's stop token.
  ///@{
  awaiter operator co_await() && noexcept {
    assert(h_ && !h_.done() && "a task can be awaited once");
    return awaiter{h_};
  }
  awaiter operator co_await() & noexcept {
    assert(h_ && !h_.done() && "a task can be awaited once");
    return awaiter{h_};
  }
  ///@}

  /// Gives up ownership of the coroutine frame (used by scope, when_all, sync_wait).
  handle_type release() noexcept { return std::exchange(h_, {}); }
  /// The coroutine (still owned by the task).
  handle_type handle() const noexcept { return h_; }

 private:
  void destroy() noexcept {
    if (h_) h_.destroy();
  }
  handle_type h_;
};

namespace detail {
template <class T>
task<T> task_promise<T>::get_return_object() noexcept {
  return task<T>{std::coroutine_handle<task_promise<T>>::from_promise(*this)};
}
inline task<void> task_promise<void>::get_return_object() noexcept {
  return task<void>{std::coroutine_handle<task_promise<void>>::from_promise(*this)};
}
}  // namespace detail

}  // namespace ringio
