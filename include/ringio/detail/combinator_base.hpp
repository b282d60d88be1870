// SPDX-License-Identifier: Apache-2.0
// ringio/detail/combinator_base.hpp — what when_all and when_any share: start child
// tasks inline, count them down, resume the parent when the last one finishes.
#pragma once

#include <coroutine>
#include <cstddef>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <variant>

#include "ringio/detail/promise_base.hpp"
#include "ringio/task.hpp"

namespace ringio::detail {

template <class T>
struct is_task : std::false_type {};
template <class T>
struct is_task<task<T>> : std::true_type {};

/// The type `co_await a` yields.
template <class A>
using await_result_t = decltype(std::declval<A&>().await_resume());

template <class A>
concept direct_awaiter = requires(A& a) {
  a.await_ready();
  a.await_resume();
};

/// What when_all, when_any and try_when_all take: a task or an operation.
template <class A>
concept task_or_operation = is_task<std::remove_cvref_t<A>>::value || direct_awaiter<std::remove_cvref_t<A>>;

/// Stops the build with one message when a combinator is given anything else (a
/// sender, above all).
template <class... As>
constexpr void check_combinable() noexcept {
  static_assert((task_or_operation<As> && ...),
                "ringio::when_all, when_any and try_when_all take tasks and operations; for senders use "
                "ringio::exec::when_all and exec::when_any, or co_await each sender in a task");
}

/// Tasks pass through; any other awaitable (an operation) is wrapped in a task.
template <class A>
auto to_task(A&& a) {
  using D = std::remove_cvref_t<A>;
  if constexpr (is_task<D>::value) {
    return D(std::forward<A>(a));
  } else if constexpr (direct_awaiter<D>) {
    return [](D op) -> task<await_result_t<D>> { co_return co_await std::move(op); }(D(std::forward<A>(a)));
  } else {
    return task<void>{};  // not reached: check_combinable stopped the build
  }
}

template <class A>
using task_of_t = decltype(to_task(std::declval<A>()));

/// void results are stored as std::monostate.
template <class T>
using stored_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
stored_t<T> take_stored(task<T>& t) {
  if constexpr (std::is_void_v<T>) {
    t.handle().promise().take();
    return {};
  } else {
    return t.handle().promise().take();
  }
}

/// Counts children down with the N+1 trick: the parent holds one count while it
/// starts them, so a child that finishes synchronously cannot resume it too early.
class countdown_sink : public completion_sink {
 protected:
  void begin(std::size_t n, std::coroutine_handle<> parent) noexcept {
    remaining_ = n + 1;
    parent_ = parent;
  }
  /// Start a child: it runs until its first suspension.
  template <class T>
  void launch(task<T>& t, const std::stop_token* token) {
    auto& p = t.handle().promise();
    p.set_sink(this);
    p.set_stop_token(token);
    resume_inline(t.handle());
  }
  /// Drop the parent's count; true if children are still running (suspend).
  bool end_launch() noexcept { return --remaining_ != 0; }

  std::coroutine_handle<> child_done() noexcept { return --remaining_ == 0 ? parent_ : std::noop_coroutine(); }

 private:
  std::size_t remaining_ = 0;
  std::coroutine_handle<> parent_;
};

template <class P>
const std::stop_token* parent_token(std::coroutine_handle<P> h) noexcept {
  if constexpr (std::is_base_of_v<promise_base, P>) return h.promise().stop_token();
  else return nullptr;
}

}  // namespace ringio::detail
