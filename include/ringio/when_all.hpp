// SPDX-License-Identifier: Apache-2.0
// ringio/when_all.hpp — run tasks concurrently and wait for all of them.
#pragma once

#include <exception>
#include <tuple>
#include <utility>
#include <vector>

#include "ringio/detail/combinator_base.hpp"
#include "ringio/task.hpp"

namespace ringio {
namespace detail {

template <class... Ts>
class when_all_awaiter final : public countdown_sink {
 public:
  explicit when_all_awaiter(task<Ts>... ts) : tasks_(std::move(ts)...) {}

  bool await_ready() const noexcept { return sizeof...(Ts) == 0; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> parent) {
    begin(sizeof...(Ts), parent);
    const std::stop_token* token = parent_token(parent);
    std::apply([&](auto&... t) { (launch(t, token), ...); }, tasks_);
    return end_launch();
  }
  std::tuple<stored_t<Ts>...> await_resume() {
    // Every child has finished: the first exception (in argument order) wins.
    std::apply([](auto&... t) { (t.handle().promise().rethrow_if_failed(), ...); }, tasks_);
    return std::apply([](auto&... t) { return std::tuple<stored_t<Ts>...>(take_stored(t)...); }, tasks_);
  }

 private:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base&) noexcept override {
    return child_done();
  }
  std::tuple<task<Ts>...> tasks_;
};

template <class T>
class when_all_vector_awaiter final : public countdown_sink {
 public:
  explicit when_all_vector_awaiter(std::vector<task<T>> ts) : tasks_(std::move(ts)) {}

  bool await_ready() const noexcept { return tasks_.empty(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> parent) {
    begin(tasks_.size(), parent);
    const std::stop_token* token = parent_token(parent);
    for (auto& t : tasks_) launch(t, token);
    return end_launch();
  }
  std::vector<stored_t<T>> await_resume() {
    for (auto& t : tasks_) t.handle().promise().rethrow_if_failed();
    std::vector<stored_t<T>> out;
    out.reserve(tasks_.size());
    for (auto& t : tasks_) out.push_back(take_stored(t));
    return out;
  }

 private:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base&) noexcept override {
    return child_done();
  }
  std::vector<task<T>> tasks_;
};

}  // namespace detail

/// Runs the tasks concurrently (each starts at once, in order) and completes when all
/// have finished, with a tuple of their values (std::monostate for void). If any
/// threw, the first exception in argument order is rethrown, after all finished.
/// The children obey the awaiting task's stop token.
/// Arguments may be tasks or operations (which are wrapped in tasks).
template <class... Ts>
[[nodiscard]] detail::when_all_awaiter<Ts...> when_all(task<Ts>... ts) {
  return detail::when_all_awaiter<Ts...>(std::move(ts)...);
}
template <class... As>
  requires(sizeof...(As) > 0 && !(detail::is_task<std::remove_cvref_t<As>>::value && ...))
[[nodiscard]] auto when_all(As&&... as) {
  detail::check_combinable<As...>();
  return when_all(detail::to_task(std::forward<As>(as))...);
}

/// The same for a run-time number of tasks; values come back in order.
template <class T>
[[nodiscard]] detail::when_all_vector_awaiter<T> when_all(std::vector<task<T>> ts) {
  return detail::when_all_vector_awaiter<T>(std::move(ts));
}

}  // namespace ringio
