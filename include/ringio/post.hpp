// ringio/post.hpp — run a function or a task on another thread's io_context.
#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

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
/// and comes back to the original context with the result.
template <class T>
class spawn_on_awaiter : completion_sink {
 public:
  spawn_on_awaiter(io_context& target, task<T> t) : target_(target), task_(std::move(t)) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    parent_ = h;
    home_ = io_context::current();
    task_.handle().promise().set_sink(this);
    auto child = task_.handle();
    post(target_, [child] { child.resume(); });
  }
  T await_resume() { return task_.handle().promise().take(); }

 private:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base&) noexcept override {
    auto parent = parent_;
    if (home_ == nullptr || home_ == io_context::current()) return parent;
    post(*home_, [parent] { parent.resume(); });
    return std::noop_coroutine();
  }
  io_context& target_;
  task<T> task_;
  std::coroutine_handle<> parent_;
  io_context* home_ = nullptr;
};

}  // namespace detail

/// Runs `t` on the thread of `target` and resumes the awaiting task on its own
/// context when `t` finishes, with its value (or exception).
template <class T>
[[nodiscard]] detail::spawn_on_awaiter<T> spawn_on(io_context& target, task<T> t) {
  return detail::spawn_on_awaiter<T>(target, std::move(t));
}

}  // namespace ringio
