// ringio/time/timeout.hpp — with_timeout(op, d): the operation fails with
// std::errc::timed_out if it has not completed within d. On io_uring this is a linked
// timeout (IOSQE_IO_LINK + IORING_OP_LINK_TIMEOUT, one submission); on epoll a timer.
// The deadline is absolute, taken when with_timeout is called: for operations made
// of several steps (send_all, recv_exact) it bounds the whole operation.
#pragma once

#include <chrono>
#include <concepts>
#include <type_traits>

#include "ringio/detail/clock.hpp"
#include "ringio/detail/op_base.hpp"
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
}  // namespace detail

/// A whole task with a deadline: if `t` has not finished within `d`, its stop token is
/// requested (its operations fail with operation_canceled), it is awaited, and the
/// result is std::errc::timed_out. A task returning result<U> gives result<U>.
template <class T>
  requires(!std::is_void_v<T>)
[[nodiscard]] task<typename detail::timed_result<T>::type> with_timeout(task<T> t, std::chrono::nanoseconds d) {
  auto v = co_await when_any(std::move(t), sleep_for(d));
  if (v.index() == 1) co_return unexpected(std::errc::timed_out);
  co_return std::get<0>(std::move(v));
}

/// The same for a task<void>: result<void>.
[[nodiscard]] inline task<result<void>> with_timeout(task<void> t, std::chrono::nanoseconds d) {
  auto v = co_await when_any(std::move(t), sleep_for(d));
  if (v.index() == 1) co_return unexpected(std::errc::timed_out);
  co_return result<void>{};
}

}  // namespace ringio
