// SPDX-License-Identifier: Apache-2.0
#include <stdexcept>

#include "ringio/io_context.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/yield.hpp"

namespace ringio::detail {

const op_vtable timer_vtable = {
    .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};
const op_vtable nop_vtable = {
    .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};

void yield_awaiter::await_suspend(std::coroutine_handle<> h) const {
  io_context* ctx = io_context::current();
  if (ctx == nullptr) throw std::logic_error("ringio: yield() outside a running io_context");
  ctx->schedule(h);
}

}  // namespace ringio::detail
