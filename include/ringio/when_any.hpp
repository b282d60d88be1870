// SPDX-License-Identifier: Apache-2.0
// ringio/when_any.hpp — run tasks concurrently; the first to finish wins, the others
// are cancelled and awaited before when_any completes.
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "ringio/detail/combinator_base.hpp"
#include "ringio/task.hpp"

namespace ringio {
namespace detail {

/// Forwards a stop of the parent's token to when_any's own source.
struct forward_stop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

class when_any_base : public countdown_sink {
 protected:
  template <class P>
  const std::stop_token* prepare(std::coroutine_handle<P> parent, std::size_t n) {
    begin(n, parent);
    if (const std::stop_token* pt = parent_token(parent); pt != nullptr && pt->stop_possible())
      link_.emplace(*pt, forward_stop{&source_});
    token_ = source_.get_token();
    return &token_;
  }
  /// Records the first finisher and cancels the rest.
  std::coroutine_handle<> finished(std::size_t index) noexcept {
    if (winner_ == npos) {
      winner_ = index;
      source_.request_stop();
    }
    return child_done();
  }
  void unlink() noexcept { link_.reset(); }

  static constexpr std::size_t npos = ~std::size_t{0};
  std::size_t winner_ = npos;

 private:
  std::stop_source source_;
  std::stop_token token_;
  std::optional<std::stop_callback<forward_stop>> link_;
};

template <class... Ts>
class when_any_awaiter final : public when_any_base {
 public:
  using value_type = std::variant<stored_t<Ts>...>;
  explicit when_any_awaiter(task<Ts>... ts) : tasks_(std::move(ts)...) {}

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> parent) {
    const std::stop_token* token = prepare(parent, sizeof...(Ts));
    std::apply([&](auto&... t) { (launch(t, token), ...); }, tasks_);
    return end_launch();
  }
  value_type await_resume() {
    unlink();
    return take<0>();
  }

 private:
  template <std::size_t I>
  value_type take() {
    if constexpr (I < sizeof...(Ts)) {
      if (winner_ == I) return value_type(std::in_place_index<I>, take_stored(std::get<I>(tasks_)));
      return take<I + 1>();
    } else {
      std::terminate();  // unreachable: some child always finishes first
    }
  }
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base& p) noexcept override {
    std::size_t index = 0, i = 0;
    std::apply([&](auto&... t) { ((&t.handle().promise() == &p ? (index = i, 0) : 0, ++i), ...); }, tasks_);
    return finished(index);
  }
  std::tuple<task<Ts>...> tasks_;
};

template <class T>
class when_any_vector_awaiter final : public when_any_base {
 public:
  explicit when_any_vector_awaiter(std::vector<task<T>> ts) : tasks_(std::move(ts)) {}

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> parent) {
    if (tasks_.empty()) throw std::invalid_argument("ringio: when_any of no tasks");
    const std::stop_token* token = prepare(parent, tasks_.size());
    for (auto& t : tasks_) launch(t, token);
    return end_launch();
  }
  std::pair<std::size_t, stored_t<T>> await_resume() {
    unlink();
    return {winner_, take_stored(tasks_[winner_])};
  }

 private:
  std::coroutine_handle<> on_task_done(std::coroutine_handle<>, promise_base& p) noexcept override {
    std::size_t index = 0;
    while (&tasks_[index].handle().promise() != &p) ++index;
    return finished(index);
  }
  std::vector<task<T>> tasks_;
};

}  // namespace detail

/// Runs the tasks concurrently; the first to finish wins. The others are cancelled
/// (their stop token is requested) and when_any completes only after they have all
/// finished. Returns a variant whose index() is the winner; the winner's exception
/// is rethrown. A stop of the awaiting task's token is passed on to every child.
/// Arguments may be tasks or operations (which are wrapped in tasks).
/// The losers' results are discarded, even a real one whose cancel lost the race (bytes
/// a recv had already read): to bound one operation or task in time use with_timeout,
/// which always delivers the real result, and prefer operations whose cancellation
/// keeps data where it was (a multishot_receiver's next(), an acceptor's next()).
template <class... Ts>
[[nodiscard]] detail::when_any_awaiter<Ts...> when_any(task<Ts>... ts) {
  static_assert(sizeof...(Ts) > 0, "when_any needs at least one task");
  return detail::when_any_awaiter<Ts...>(std::move(ts)...);
}
template <class... As>
  requires(sizeof...(As) > 0 && !(detail::is_task<std::remove_cvref_t<As>>::value && ...))
[[nodiscard]] auto when_any(As&&... as) {
  detail::check_combinable<As...>();
  return when_any(detail::to_task(std::forward<As>(as))...);
}

/// The same for a run-time number of tasks: returns {winner index, value}.
template <class T>
[[nodiscard]] detail::when_any_vector_awaiter<T> when_any(std::vector<task<T>> ts) {
  return detail::when_any_vector_awaiter<T>(std::move(ts));
}

}  // namespace ringio
