// SPDX-License-Identifier: Apache-2.0
// ringio/detail/io_operation.hpp — the awaiter half shared by every operation: pick the
// stop token (an explicit one, else the awaiting task's), start, and turn the raw result
// into a result<T>.
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>

#include "ringio/detail/op_base.hpp"
#include "ringio/detail/promise_base.hpp"
#include "ringio/result.hpp"

namespace ringio::detail {

/// The error of a failed operation: -ECANCELED after a deadline becomes timed_out. A
/// request interrupted in an io_uring worker by its cancel reports -EINTR, or the
/// kernel's internal restart codes (-ERESTARTSYS..-ERESTART_RESTARTBLOCK, 512..516:
/// a blocked open(2) of a FIFO does): cancelled all the same.
inline std::error_code op_error(const op_base& op) noexcept {
  const bool interrupted = op.res == -EINTR || (op.res <= -512 && op.res >= -516);
  if ((op.res == -ECANCELED || interrupted) && op.timed_out) return std::make_error_code(std::errc::timed_out);
  if (interrupted && op.cancel_requested) return errno_code(-ECANCELED);
  return errno_code(op.res);
}

/// res >= 0 as a byte count, else the error.
inline result<std::size_t> size_result(const op_base& op) noexcept {
  if (op.res >= 0) return static_cast<std::size_t>(op.res);
  return unexpected(op_error(op));
}

/// res == 0 as success, else the error.
inline result<void> void_result(const op_base& op) noexcept {
  if (op.res >= 0) return {};
  return unexpected(op_error(op));
}

/// CRTP awaiter: Derived provides `get_result()`; the op_vtable comes in the constructor.
template <class Derived>
class io_operation : public op_base {
 public:
  explicit io_operation(const op_vtable* vt, op_kind k = op_kind::io) noexcept : op_base(vt, k) {}
  io_operation(const io_operation&) = default;

  bool await_ready() const noexcept { return false; }

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    const std::stop_token* inherited = inherited_token(h);
    if (!token_.stop_possible()) return start_operation(*this, h, inherited);
    return start_operation(*this, h, &token_, inherited);
  }

  auto await_resume() { return static_cast<Derived*>(this)->get_result(); }

  /// Makes the operation obey `t` as well as the awaiting task's stop token: a stop of
  /// either cancels it.
  [[nodiscard]] Derived with_stop(std::stop_token t) && {
    token_ = std::move(t);
    return std::move(static_cast<Derived&>(*this));
  }

  /// Makes the operation obey `t` too (before it starts).
  void set_stop_token(std::stop_token t) noexcept { token_ = std::move(t); }
  [[nodiscard]] const std::stop_token& explicit_stop_token() const noexcept { return token_; }

  /// Sets an absolute deadline (ns, CLOCK_MONOTONIC); used by with_timeout.
  void set_deadline(std::int64_t ns) noexcept { deadline_ns = ns; }

 protected:
  /// The stop token of the awaiting task (null when the awaiter is not a ringio task).
  template <class P>
  static const std::stop_token* inherited_token(std::coroutine_handle<P> h) noexcept {
    if constexpr (std::is_base_of_v<promise_base, P>) return h.promise().stop_token();
    else return nullptr;
  }

  /// For waits that must take nothing once stopped (a select's losing branch): when
  /// `inherited` or the explicit token is already stopped, completes the operation with
  /// operation_canceled without starting it and returns true.
  bool finish_if_stopped(const std::stop_token* inherited) noexcept {
    if ((inherited == nullptr || !inherited->stop_requested()) && !token_.stop_requested()) return false;
    res = -ECANCELED;
    cancel_requested = true;
    state = op_state::done;
    return true;
  }

  std::stop_token token_;
};

}  // namespace ringio::detail
