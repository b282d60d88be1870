// SPDX-License-Identifier: Apache-2.0
// ringio/sync_wait.hpp — run a task to completion on an io_context from ordinary code.
#pragma once

#include <coroutine>
#include <utility>

#include "ringio/io_context.hpp"
#include "ringio/task.hpp"

namespace ringio {

namespace detail {
class sync_wait_sink final : public completion_sink {
 public:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base&) noexcept override {
    done = true;
    return std::noop_coroutine();
  }
  static bool is_done(void* self) { return static_cast<sync_wait_sink*>(self)->done; }
  bool done = false;
};
}  // namespace detail

/// Runs the loop of `ctx` on the calling thread until `t` finishes; returns its value
/// or rethrows its exception. Other tasks on `ctx` run meanwhile. A stop() arriving
/// meanwhile does not interrupt it; it stays pending for the next run().
template <class T>
T sync_wait(io_context& ctx, task<T> t) {
  detail::sync_wait_sink sink;
  auto h = t.handle();
  h.promise().set_sink(&sink);
  ctx.schedule(h);
  ctx.run_until(&detail::sync_wait_sink::is_done, &sink);
  return h.promise().take();
}

}  // namespace ringio
