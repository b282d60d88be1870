// SPDX-License-Identifier: Apache-2.0
// ringio/scope.hpp — structured concurrency: tasks spawned into a scope run
// concurrently with their spawner, and `co_await scope.join()` waits for all of them.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <optional>
#include <stop_token>

#include "ringio/detail/promise_base.hpp"
#include "ringio/log.hpp"
#include "ringio/task.hpp"

namespace ringio {

/// Owns spawned tasks until they finish. Children obey the scope's stop token
/// (request_stop() cancels their operations). A scope created inside a task inherits
/// that task's stop token: stopping the task (its scope, when_any, with_timeout)
/// stops the children too. The first exception escaping a child is rethrown by
/// join(). Destroying a scope whose children still run terminates the program:
/// always `co_await join()` first.
class scope final : private detail::completion_sink {
 public:
  /// Inherits the stop token of the task creating it (none outside a task).
  scope() {
    if (detail::running_task != nullptr) {
      if (const std::stop_token* t = detail::running_task->stop_token()) link(*t);
    }
  }
  /// Obeys `parent` instead (an empty token: only request_stop() stops the children).
  explicit scope(std::stop_token parent) { link(parent); }
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;
  ~scope() {
    if (live_ != 0) {
      log(log_level::error, "scope destroyed with %zu running tasks (join() it first)", live_);
      std::terminate();
    }
  }

  /// Starts `t` now, on the calling thread's loop; it runs until its first suspension
  /// before spawn returns.
  void spawn(task<void> t) {
    auto h = t.release();
    h.promise().set_sink(this);
    h.promise().set_stop_token(&token_);
    ++live_;
    detail::resume_inline(h);
  }

  /// Cancels the operations of every child (they see operation_canceled).
  void request_stop() noexcept { source_.request_stop(); }
  /// The token the children obey (stopped by request_stop() or by the parent).
  [[nodiscard]] std::stop_token stop_token() const noexcept { return token_; }
  /// Children that have not finished.
  [[nodiscard]] std::size_t size() const noexcept { return live_; }

  /// @cond INTERNAL
  struct join_awaiter {
    scope& s;
    bool await_ready() const noexcept { return s.live_ == 0; }
    void await_suspend(std::coroutine_handle<> h) noexcept { s.joiner_ = h; }
    void await_resume() const {
      if (s.error_) std::rethrow_exception(std::exchange(s.error_, nullptr));
    }
  };
  /// @endcond
  /// Completes when every child has finished; rethrows the first child exception.
  [[nodiscard]] join_awaiter join() noexcept { return {*this}; }

 private:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<> h, detail::promise_base& p) noexcept override {
    if (p.failed() && !error_) error_ = p.exception();
    h.destroy();
    if (--live_ == 0 && joiner_) return std::exchange(joiner_, {});
    return std::noop_coroutine();
  }

  struct forward_to_source {
    std::stop_source* target;
    void operator()() const noexcept { target->request_stop(); }
  };
  void link(const std::stop_token& parent) {
    if (parent.stop_possible()) parent_link_.emplace(parent, forward_to_source{&source_});
  }

  std::stop_source source_;
  std::stop_token token_ = source_.get_token();
  std::optional<std::stop_callback<forward_to_source>> parent_link_;
  std::size_t live_ = 0;
  std::coroutine_handle<> joiner_;
  std::exception_ptr error_;
};

}  // namespace ringio
