// SPDX-License-Identifier: Apache-2.0
// ringio/post.hpp — run a function or a task on another thread's io_context.
#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "ringio/detail/foreign_wait.hpp"
#include "ringio/detail/remote_item.hpp"
#include "ringio/io_context.hpp"
#include "ringio/task.hpp"

namespace ringio {
namespace detail {

template <class F>
struct posted_function final : remote_item {
  explicit posted_function(F&& f) : fn(std::move(f)) {
    run = [](remote_item& self, io_context&) noexcept {
      auto* p = static_cast<posted_function*>(&self);
      std::unique_ptr<posted_function> owner(p);
      p->fn();
    };
  }
  F fn;
};

}  // namespace detail

/// Runs `fn()` on the thread of `ctx`, soon. Safe from any thread; one allocation.
/// `fn` must not throw (an escaping exception terminates the program).
template <class F>
void post(io_context& ctx, F fn) {
  auto* item = new detail::posted_function<std::decay_t<F>>(std::move(fn));
  ctx.post_remote(*item);
}

namespace detail {

/// Awaiter of spawn_on: moves the awaiting task onto `target`, runs the child there,
/// and comes back to the original context with the result. The child obeys a stop
/// source of its own, linked to the awaiting task's token and requested when the
/// home context shuts down.
template <class T>
class spawn_on_awaiter : completion_sink {
 public:
  spawn_on_awaiter(io_context& target, task<T> t) : target_(target), task_(std::move(t)) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  void await_suspend(std::coroutine_handle<P> h) {
    parent_ = h;
    home_ = io_context::current();
    auto& promise = task_.handle().promise();
    promise.set_sink(this);
    promise.set_stop_token(&child_token_);
    if constexpr (std::is_base_of_v<promise_base, P>) {
      if (const std::stop_token* t = h.promise().stop_token(); t != nullptr && t->stop_possible())
        link_.emplace(*t, forward{&child_stop_});
    }
    if (home_ != nullptr) {
      wait_.child_stop = &child_stop_;
      home_->add_foreign_wait(wait_);
    }
    auto child = task_.handle();
    post(target_, [child] { resume_flat(child); });
  }
  T await_resume() {
    if (home_ != nullptr) home_->remove_foreign_wait(wait_);
    link_.reset();
    return task_.handle().promise().take();
  }

 private:
  struct forward {
    std::stop_source* target;
    void operator()() const noexcept { target->request_stop(); }
  };
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base&) noexcept override {
    auto parent = parent_;
    if (home_ == nullptr || home_ == io_context::current()) return parent;
    post(*home_, [parent] { resume_flat(parent); });
    return std::noop_coroutine();
  }
  io_context& target_;
  task<T> task_;
  std::coroutine_handle<> parent_;
  io_context* home_ = nullptr;
  std::stop_source child_stop_;
  std::stop_token child_token_ = child_stop_.get_token();
  std::optional<std::stop_callback<forward>> link_;
  foreign_wait wait_;
};

}  // namespace detail

/// Runs `t` on the thread of `target` and resumes the awaiting task on its own
/// context when `t` finishes, with its value (or exception). A stop of the awaiting
/// task's token (when_any, with_timeout, a scope) is passed on to `t`, and so is the
/// shutdown of the awaiting task's context, which waits for `t` to finish.
template <class T>
[[nodiscard]] detail::spawn_on_awaiter<T> spawn_on(io_context& target, task<T> t) {
  return detail::spawn_on_awaiter<T>(target, std::move(t));
}

}  // namespace ringio
