// SPDX-License-Identifier: Apache-2.0
// ringio/yield.hpp — give other tasks a turn (yield) or make a round trip through the
// backend (nop: an IORING_OP_NOP on io_uring).
#pragma once

#include <coroutine>

#include "ringio/detail/io_operation.hpp"

namespace ringio {
namespace detail {

extern const op_vtable nop_vtable;

class nop_op : public io_operation<nop_op> {
 public:
  nop_op() noexcept : io_operation(&nop_vtable, op_kind::nop) {}
  result<void> get_result() const noexcept { return void_result(*this); }
};

struct yield_awaiter {
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const;
  void await_resume() const noexcept {}
};

}  // namespace detail

/// Suspends the task and resumes it on a later loop iteration, after the tasks and
/// completions that are already waiting.
[[nodiscard]] inline detail::yield_awaiter yield() noexcept { return {}; }

/// A no-op through the backend (IORING_OP_NOP on io_uring).
[[nodiscard]] inline detail::nop_op nop() noexcept { return {}; }

}  // namespace ringio
