// SPDX-License-Identifier: Apache-2.0
// ringio/exec/from_task.hpp — from_task(t): a ringio task<T> as a sender.
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "ringio/detail/promise_base.hpp"
#include "ringio/exec/tags.hpp"
#include "ringio/task.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

template <class T, class R>
class task_state final : ringio::detail::completion_sink {
  using token_type = stop_token_of_t<decltype(exec::get_env(std::declval<const R&>()))>;
  struct forward {
    std::stop_source* target;
    void operator()() const noexcept { target->request_stop(); }
  };

 public:
  using operation_state_concept = operation_state_t;

  task_state(task<T> t, R r) : task_(std::move(t)), rcvr_(std::move(r)) {}
  task_state(const task_state&) = delete;
  task_state& operator=(const task_state&) = delete;

  void start() & noexcept {
    auto& promise = task_.handle().promise();
    promise.set_sink(this);
    auto token = exec::get_stop_token(exec::get_env(rcvr_));
    if constexpr (std::is_same_v<token_type, std::stop_token>) {
      own_token_ = token;
    } else if (token.stop_possible()) {  // another token type: bridged to a std::stop_source
      source_.emplace();
      own_token_ = source_->get_token();
      link_.emplace(token, forward{&*source_});
    }
    promise.set_stop_token(&own_token_);
    ringio::detail::resume_inline(task_.handle());
  }

 private:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, ringio::detail::promise_base& p) noexcept override {
    link_.reset();
    if (p.failed()) {
      std::move(rcvr_).set_error(p.exception());
    } else if constexpr (std::is_void_v<T>) {
      std::move(rcvr_).set_value();
    } else {
      T v = task_.handle().promise().take();
      std::move(rcvr_).set_value(std::move(v));
    }
    return std::noop_coroutine();
  }

  task<T> task_;
  R rcvr_;
  std::stop_token own_token_;
  std::optional<std::stop_source> source_;
  std::optional<stop_callback_for_t<token_type, forward>> link_;
};

}  // namespace detail
/// @endcond

/// The sender of from_task().
template <class T>
class task_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// set_value(T) (set_value() for void), set_error(std::exception_ptr), stopped.
  using completion_signatures =
      std::conditional_t<std::is_void_v<T>,
                         exec::completion_signatures<set_value_t(), set_error_t(std::exception_ptr), set_stopped_t()>,
                         exec::completion_signatures<set_value_t(std::conditional_t<std::is_void_v<T>, int, T>),
                                                     set_error_t(std::exception_ptr), set_stopped_t()>>;

  /// Holds the task (not started).
  explicit task_sender(task<T> t) noexcept : task_(std::move(t)) {}

  /// The operation state; start() runs the task inline until its first suspension.
  template <class R>
  detail::task_state<T, std::decay_t<R>> connect(R&& r) && {
    return {std::move(task_), std::forward<R>(r)};
  }

 private:
  task<T> task_;
};

/// A task as a sender: start() runs it (on the calling thread, which must run an
/// io_context); it completes with set_value(its value), or set_error(exception_ptr)
/// if it threw. The receiver's stop token is the task's stop token (so its operations
/// are cancelled by a stop and the task sees operation_canceled in their results;
/// what it returns then is its value).
template <class T>
[[nodiscard]] task_sender<T> from_task(task<T> t) noexcept {
  return task_sender<T>(std::move(t));
}

}  // namespace ringio::exec
