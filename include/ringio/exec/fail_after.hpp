// SPDX-License-Identifier: Apache-2.0
// ringio/exec/fail_after.hpp — fail_after(d): a timer that completes with the error
// timed_out; raced against an operation in when_any, it bounds that operation.
#pragma once

#include <chrono>
#include <system_error>
#include <utility>

#include "ringio/exec/io_sender.hpp"
#include "ringio/time/sleep.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {
template <class R>
struct fail_receiver {
  using receiver_concept = receiver_t;
  R rcvr;
  void set_value() noexcept { std::move(rcvr).set_error(std::make_error_code(std::errc::timed_out)); }
  void set_error(std::error_code ec) noexcept { std::move(rcvr).set_error(ec); }
  void set_stopped() noexcept { std::move(rcvr).set_stopped(); }
  env_of_t<R> get_env() const noexcept { return exec::get_env(rcvr); }
};
}  // namespace detail
/// @endcond

/// The sender of fail_after() and fail_at().
class fail_after_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// Never a value: timed_out when the time comes, stopped when cancelled first.
  using completion_signatures = exec::completion_signatures<set_error_t(std::error_code), set_stopped_t()>;

  /// A timer waking at `wake_ns` (CLOCK_MONOTONIC).
  explicit fail_after_sender(std::int64_t wake_ns) noexcept : wake_ns_(wake_ns) {}

  /// The operation state: the timer operation itself.
  template <class R>
  detail::io_state<ringio::detail::sleep_op, detail::fail_receiver<std::decay_t<R>>> connect(R&& r) const {
    return {ringio::detail::sleep_op(wake_ns_), detail::fail_receiver<std::decay_t<R>>{std::forward<R>(r)}};
  }

 private:
  std::int64_t wake_ns_;
};

/// Completes with set_error(timed_out) after `d`, or set_stopped() when its stop token
/// is requested first (the timer is cancelled). The timeout of when_any races:
/// `when_any(recv(s, buf), fail_after(100ms))`.
[[nodiscard]] inline fail_after_sender fail_after(std::chrono::nanoseconds d) noexcept {
  return fail_after_sender(ringio::detail::deadline_after(d));
}

/// The same at time point `t`.
[[nodiscard]] inline fail_after_sender fail_at(std::chrono::steady_clock::time_point t) noexcept {
  return fail_after_sender(ringio::detail::to_monotonic_ns(t));
}

}  // namespace ringio::exec
