// SPDX-License-Identifier: Apache-2.0
// ringio/time/timeout.hpp — with_timeout(op, d): the operation fails with
// std::errc::timed_out if it has not completed within d. On io_uring this is a linked
// timeout (IOSQE_IO_LINK + IORING_OP_LINK_TIMEOUT, one submission); on epoll a timer.
// The deadline is absolute, taken when with_timeout is called: for operations made
// of several steps (send_all, recv_exact) it bounds the whole operation.
#pragma once

#include <chrono>
#include <concepts>
#include <exception>
#include <optional>
#include <stop_token>
#include <type_traits>

#include "ringio/detail/clock.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/scope.hpp"
#include "ringio/stop.hpp"
#include "ringio/task.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/when_any.hpp"

namespace ringio {

template <class Op>
  requires std::derived_from<Op, detail::op_base>
[[nodiscard]] Op with_timeout(Op op, std::chrono::nanoseconds d) noexcept {
  static_assert(!std::is_same_v<Op, detail::sleep_op>, "a sleep needs no timeout");
  op.set_deadline(detail::deadline_after(d));
  return op;
}

/// Same, with an absolute deadline.
template <class Op>
  requires std::derived_from<Op, detail::op_base>
[[nodiscard]] Op with_deadline(Op op, std::chrono::steady_clock::time_point t) noexcept {
  static_assert(!std::is_same_v<Op, detail::sleep_op>, "a sleep needs no deadline");
  op.set_deadline(detail::to_monotonic_ns(t));
  return op;
}

namespace detail {
template <class T>
struct timed_result {
  using type = result<T>;
};
template <class U>
struct timed_result<result<U>> {  // flatten: a task that already returns result<U>
  using type = result<U>;
};
template <class T>
struct is_result : std::false_type {};
template <class U>
struct is_result<result<U>> : std::true_type {};

/// Awaits a task that obeys `token` (instead of inheriting the awaiter's).
template <class T>
struct token_awaiter {
  task<T>& t;
  const std::stop_token* token;
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) noexcept {
    t.handle().promise().set_continuation(parent);
    t.handle().promise().set_stop_token(token);
    return hand_over(parent.address(), t.handle());
  }
  T await_resume() { return t.handle().promise().take(); }
};

/// The timer of with_timeout(task): requests `target` when `d` has passed.
inline task<void> stop_after(std::chrono::nanoseconds d, std::stop_source& target, bool& fired) {
  auto slept = co_await sleep_for(d);
  if (slept) {
    fired = true;
    target.request_stop();
  }
}

struct request_stop_of {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};
}  // namespace detail

/// A whole task with a deadline: if `t` has not finished within `d`, its stop token is
/// requested (its operations fail with operation_canceled) and it is awaited. Its own
/// result always comes back when it has one: a task returning result<U> that finishes
/// with anything but operation_canceled (data it read, a connection it accepted, even
/// after the deadline) gives that; one that was cancelled by the deadline gives
/// std::errc::timed_out. Other tasks give result<T>: their value, or timed_out if the
/// deadline fired before they finished. A stop of the awaiting task's token is passed
/// on to `t` as well.
template <class T>
[[nodiscard]] task<typename detail::timed_result<T>::type> with_timeout(task<T> t, std::chrono::nanoseconds d) {
  std::stop_source stop;
  std::stop_token outer = co_await current_stop_token();
  std::stop_callback<detail::request_stop_of> link(outer, detail::request_stop_of{&stop});
  const std::stop_token token = stop.get_token();
  bool fired = false;
  scope timer(std::stop_token{});
  timer.spawn(detail::stop_after(d, stop, fired));
  std::exception_ptr failure;
  std::optional<typename detail::timed_result<T>::type> out;
  try {
    if constexpr (std::is_void_v<T>) {
      co_await detail::token_awaiter<T>{t, &token};
      if (fired) out.emplace(unexpected(std::errc::timed_out));
      else out.emplace();
    } else if constexpr (detail::is_result<T>::value) {
      T r = co_await detail::token_awaiter<T>{t, &token};
      if (!r && fired && r.error() == std::errc::operation_canceled) out.emplace(unexpected(std::errc::timed_out));
      else out.emplace(std::move(r));
    } else {
      T v = co_await detail::token_awaiter<T>{t, &token};
      if (fired) out.emplace(unexpected(std::errc::timed_out));
      else out.emplace(std::move(v));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  timer.request_stop();
  co_await timer.join();
  if (failure) std::rethrow_exception(failure);
  co_return std::move(*out);
}

}  // namespace ringio
