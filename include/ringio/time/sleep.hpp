// SPDX-License-Identifier: Apache-2.0
// ringio/time/sleep.hpp — suspend the awaiting task for a while.
#pragma once

#include <chrono>

#include "ringio/detail/clock.hpp"
#include "ringio/detail/io_operation.hpp"

namespace ringio {
namespace detail {

extern const op_vtable timer_vtable;

class sleep_op : public io_operation<sleep_op> {
 public:
  explicit sleep_op(std::int64_t wake_ns) noexcept : io_operation(&timer_vtable, op_kind::timer) {
    deadline_ns = wake_ns;
  }
  result<void> get_result() const noexcept { return void_result(*this); }
};

}  // namespace detail

/// Completes after `d` (CLOCK_MONOTONIC). Cancelled by a stop: operation_canceled.
[[nodiscard]] inline detail::sleep_op sleep_for(std::chrono::nanoseconds d) noexcept {
  return detail::sleep_op(detail::deadline_after(d));
}

/// Completes at `t`. Cancelled by a stop: operation_canceled.
[[nodiscard]] inline detail::sleep_op sleep_until(std::chrono::steady_clock::time_point t) noexcept {
  return detail::sleep_op(detail::to_monotonic_ns(t));
}

}  // namespace ringio
