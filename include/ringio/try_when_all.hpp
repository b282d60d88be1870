// SPDX-License-Identifier: Apache-2.0
// ringio/try_when_all.hpp — run tasks returning result<T> concurrently; the first
// failure stops the others, and after all have finished it is what comes back.
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <stop_token>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ringio/detail/combinator_base.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio {
namespace detail {

/// Whether R is a `result<U>`, and its U.
template <class R>
struct result_traits {
  static constexpr bool is_result = false;  ///< R is not a result
};
/// A `result<U>`: its value type is U.
template <class U>
struct result_traits<result<U>> {
  static constexpr bool is_result = true;  ///< R is a result
  using value_type = U;                    ///< what it holds on success
};

/// The value a child contributes: U for `result<U>`, std::monostate for `result<void>`.
template <class R>
using try_stored_t = stored_t<typename result_traits<R>::value_type>;

/// Moves the value out of a finished child that succeeded.
template <class R>
try_stored_t<R> take_value(task<R>& t) {
  R r = t.handle().promise().take();
  if constexpr (std::is_void_v<typename result_traits<R>::value_type>) {
    return {};
  } else {
    return std::move(*r);
  }
}

/// What both forms share: the children's stop source, linked to the parent's token,
/// and the first failure.
class try_when_all_base : public countdown_sink {
 protected:
  /// Starts counting, links the parent's token; returns the children's token.
  template <class P>
  const std::stop_token* prepare(std::coroutine_handle<P> parent, std::size_t n) {
    begin(n, parent);
    if (const std::stop_token* pt = parent_token(parent); pt != nullptr && pt->stop_possible())
      link_.emplace(*pt, forward_stop{&source_});
    token_ = source_.get_token();
    return &token_;
  }
  /// A child finished; the first one that failed (error or exception) stops the rest.
  template <class R>
  std::coroutine_handle<> finished(task<R>& t) noexcept {
    auto& p = t.handle().promise();
    const R* r = p.peek();
    if (!failed_ && (p.failed() || r == nullptr || !r->has_value())) {
      failed_ = true;
      if (r != nullptr) error_ = r->error();
      source_.request_stop();
    }
    return child_done();
  }
  /// Detaches from the parent's token (before the awaiter goes away).
  void unlink() noexcept { link_.reset(); }

  bool failed_ = false;    ///< a child failed (error or exception)
  std::error_code error_;  ///< the first failure's error (empty for an exception)

 private:
  /// Forwards a stop of the parent's token to the children's source.
  struct forward_stop {
    std::stop_source* target;
    void operator()() const noexcept { target->request_stop(); }
  };
  std::stop_source source_;
  std::stop_token token_;
  std::optional<std::stop_callback<forward_stop>> link_;
};

/// The awaiter of try_when_all(tasks...).
template <class... Rs>
class try_when_all_awaiter final : public try_when_all_base {
 public:
  using value_type = std::tuple<try_stored_t<Rs>...>;  ///< the values on success
  /// Takes the children (not started yet).
  explicit try_when_all_awaiter(task<Rs>... ts) : tasks_(std::move(ts)...) {}

  /// No children: nothing to wait for.
  bool await_ready() const noexcept { return sizeof...(Rs) == 0; }
  /// Starts every child; suspends unless all finished at once.
  template <class P>
  bool await_suspend(std::coroutine_handle<P> parent) {
    const std::stop_token* token = prepare(parent, sizeof...(Rs));
    std::apply([&](auto&... t) { (launch(t, token), ...); }, tasks_);
    return end_launch();
  }
  /// The first exception in argument order, else the first error, else the values.
  result<value_type> await_resume() {
    unlink();
    std::apply([](auto&... t) { (t.handle().promise().rethrow_if_failed(), ...); }, tasks_);
    if (failed_) return unexpected(error_);
    return std::apply([](auto&... t) { return value_type(take_value(t)...); }, tasks_);
  }

 private:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base& p) noexcept override {
    std::coroutine_handle<> next;
    std::apply([&](auto&... t) { ((&t.handle().promise() == &p ? (next = finished(t), 0) : 0), ...); }, tasks_);
    return next;
  }
  std::tuple<task<Rs>...> tasks_;
};

/// The awaiter of try_when_all(std::vector<task<R>>).
template <class R>
class try_when_all_vector_awaiter final : public try_when_all_base {
 public:
  using value_type = std::vector<try_stored_t<R>>;  ///< the values on success
  /// Takes the children (not started yet).
  explicit try_when_all_vector_awaiter(std::vector<task<R>> ts) : tasks_(std::move(ts)) {}

  /// No children: nothing to wait for.
  bool await_ready() const noexcept { return tasks_.empty(); }
  /// Starts every child; suspends unless all finished at once.
  template <class P>
  bool await_suspend(std::coroutine_handle<P> parent) {
    const std::stop_token* token = prepare(parent, tasks_.size());
    for (auto& t : tasks_) launch(t, token);
    return end_launch();
  }
  /// The first exception in order, else the first error, else the values.
  result<value_type> await_resume() {
    unlink();
    for (auto& t : tasks_) t.handle().promise().rethrow_if_failed();
    if (failed_) return unexpected(error_);
    value_type out;
    out.reserve(tasks_.size());
    for (auto& t : tasks_) out.push_back(take_value(t));
    return out;
  }

 private:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base& p) noexcept override {
    std::size_t i = 0;
    while (&tasks_[i].handle().promise() != &p) ++i;
    return finished(tasks_[i]);
  }
  std::vector<task<R>> tasks_;
};

}  // namespace detail

/// Runs tasks that return result<T> concurrently (each starts at once, in order) and
/// completes when all have finished. On success: a tuple of their values, in argument
/// order, with std::monostate for result<void> (so indices match the arguments).
/// The first child to fail (in completion order) requests the stop of the others
/// (their operations end with operation_canceled) and, once every child has finished,
/// its error is the result; the siblings' results, even successful ones, are dropped.
/// An exception counts as a failure too (it stops the siblings); after all finished
/// the first exception in argument order is rethrown, whatever errors came before.
/// A stop of the awaiting task's token is passed on to every child; what they then
/// return (usually operation_canceled) is the result. No tasks: an empty tuple.
/// Arguments may be tasks or operations returning result<T> (wrapped in tasks).
template <class... Rs>
[[nodiscard]] detail::try_when_all_awaiter<Rs...> try_when_all(task<Rs>... ts) {
  static_assert((detail::result_traits<Rs>::is_result && ...), "try_when_all takes tasks returning result<T>");
  return detail::try_when_all_awaiter<Rs...>(std::move(ts)...);
}
/// Operations (or a mix of operations and tasks), each wrapped in a task.
template <class... As>
  requires(sizeof...(As) > 0 && !(detail::is_task<std::remove_cvref_t<As>>::value && ...))
[[nodiscard]] auto try_when_all(As&&... as) {
  detail::check_combinable<As...>();
  return try_when_all(detail::to_task(std::forward<As>(as))...);
}

/// The same for a run-time number of tasks: on success their values in order (an
/// empty vector for no tasks).
template <class R>
[[nodiscard]] detail::try_when_all_vector_awaiter<R> try_when_all(std::vector<task<R>> ts) {
  static_assert(detail::result_traits<R>::is_result, "try_when_all takes tasks returning result<T>");
  return detail::try_when_all_vector_awaiter<R>(std::move(ts));
}

}  // namespace ringio
