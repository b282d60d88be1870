// SPDX-License-Identifier: Apache-2.0
// ringio/exec/sender_awaiter.hpp — `co_await sender` inside a ringio task: the task's
// stop token is the sender's stop token, and the result comes back as a result<T>.
#pragma once

#include <atomic>
#include <coroutine>
#include <exception>
#include <optional>
#include <stop_token>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ringio/detail/promise_base.hpp"
#include "ringio/detail/remote_item.hpp"
#include "ringio/exec/connect.hpp"
#include "ringio/exec/env.hpp"
#include "ringio/exec/inplace_stop_token.hpp"
#include "ringio/exec/manual_lifetime.hpp"
#include "ringio/exec/outcome.hpp"
#include "ringio/exec/scheduler.hpp"
#include "ringio/exec/sender_traits.hpp"
#include "ringio/io_context.hpp"
#include "ringio/result.hpp"

namespace ringio::detail {

/// @cond INTERNAL
template <class Tuple>
struct awaited_value {
  using type = Tuple;
};
template <>
struct awaited_value<std::tuple<>> {
  using type = void;
};
template <class T>
struct awaited_value<std::tuple<T>> {
  using type = T;
};

/// The environment of a sender awaited in a task: get_stop_token answers an
/// inplace_stop_token that the task's stop token stops, get_scheduler a scheduler for
/// the task's loop.
using awaiter_env = exec::env_with<exec::env_with<exec::empty_env, exec::get_stop_token_t, exec::inplace_stop_token>,
                                   exec::get_scheduler_t, exec::scheduler>;

/// What `co_await s` does in a task (promise_base::await_transform picks it for any
/// sender): connects s to a receiver whose environment is an awaiter_env, starts it,
/// and resumes the task on its own loop (posted there if the sender completed on
/// another thread). The result is a result<T>: the value (void for none, a tuple for
/// several), the std::error_code of set_error, or operation_canceled for set_stopped;
/// an error of another type is thrown (std::exception_ptr rethrown). A connect that
/// throws throws from the co_await.
template <class S>
class sender_awaiter {
  using values_t = exec::value_tuple_of_t<S, awaiter_env>;
  using value_type = typename awaited_value<values_t>::type;

  struct receiver {
    using receiver_concept = exec::receiver_t;
    sender_awaiter* self;
    template <class... A>
    void set_value(A&&... a) noexcept {
      self->result_.set_value(std::forward<A>(a)...);
      self->done();
    }
    template <class E>
    void set_error(E&& e) noexcept {
      self->result_.set_error(std::forward<E>(e));
      self->done();
    }
    void set_stopped() noexcept { self->done(); }
    awaiter_env get_env() const noexcept {
      // A task that cannot be stopped gives a token that cannot stop either.
      const bool cancellable = self->token_ != nullptr && self->token_->stop_possible();
      return exec::with_scheduler(
          exec::with_stop_token(exec::empty_env{}, cancellable ? self->stop_.get_token() : exec::inplace_stop_token{}),
          exec::scheduler(*self->home_));
    }
  };
  using op_t = exec::connect_result_t<S, receiver>;

 public:
  template <class A>
  sender_awaiter(A&& s, const std::stop_token* token) : token_(token), home_(io_context::current()) {
    op_.construct_with([&] { return exec::connect(std::forward<A>(s), receiver{this}); });
  }
  sender_awaiter(const sender_awaiter&) = delete;
  sender_awaiter& operator=(const sender_awaiter&) = delete;
  ~sender_awaiter() { op_.destroy(); }

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) noexcept {
    waiter_ = h;
    if (token_ != nullptr && token_->stop_possible()) on_stop_.emplace(*token_, forward{this});
    op_.get().start();
    int expected = starting;
    // Still running: the completion resumes the task. Finished inline: go on at once.
    return state_.compare_exchange_strong(expected, suspended, std::memory_order_acq_rel);
  }
  result<value_type> await_resume() {
    if (result_.value) {
      if constexpr (std::is_void_v<value_type>) return {};
      else if constexpr (std::tuple_size_v<values_t> == 1) return std::get<0>(std::move(*result_.value));
      else return std::move(*result_.value);
    }
    if (result_.has_error()) {
      std::error_code ec;
      std::visit(
          [&](auto& e) {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<E, std::error_code>) ec = e;
            else if constexpr (std::is_same_v<E, std::exception_ptr>) std::rethrow_exception(e);
            else if constexpr (!std::is_same_v<E, std::monostate>) throw std::move(e);
          },
          result_.error);
      return unexpected(ec);
    }
    return unexpected(std::make_error_code(std::errc::operation_canceled));
  }

 private:
  static constexpr int starting = 0, suspended = 1, finished = 2;

  // Runs the task's stop on the sender's token. A sender that completes inside that
  // request (on this thread) is finished only after it returns: the task it resumes
  // may free this awaiter, which the request still uses.
  struct forward {
    sender_awaiter* self;
    void operator()() const noexcept {
      const void* outer = forwarding;
      forwarding = self;
      self->stop_.request_stop();
      forwarding = outer;
      if (self->deferred_) self->finish();
    }
  };
  static inline thread_local const void* forwarding = nullptr;  // whose stop runs here

  void done() noexcept {
    if (forwarding == this) {
      deferred_ = true;
      return;
    }
    finish();
  }
  void finish() noexcept {
    on_stop_.reset();  // waits for a forward running on another thread
    if (state_.exchange(finished, std::memory_order_acq_rel) != suspended) return;  // inline
    if (home_ == nullptr || io_context::current() == home_) {
      resume_inline(waiter_);
      return;
    }
    back_.arg = this;
    back_.run = [](remote_item& it, io_context&) noexcept {
      resume_inline(static_cast<sender_awaiter*>(it.arg)->waiter_);
    };
    home_->post_remote(back_);
  }

  const std::stop_token* token_;
  io_context* home_;
  std::coroutine_handle<> waiter_;
  std::atomic<int> state_{starting};
  exec::inplace_stop_source stop_;  // the sender's; the task's token stops it
  std::optional<std::stop_callback<forward>> on_stop_;
  bool deferred_ = false;  // completed inside forward: it finishes
  exec::detail::outcome<values_t, exec::error_types_of_t<S, awaiter_env>> result_;
  remote_item back_;
  exec::detail::manual_lifetime<op_t> op_;
};
/// @endcond

}  // namespace ringio::detail
