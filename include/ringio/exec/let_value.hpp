// SPDX-License-Identifier: Apache-2.0
// ringio/exec/let_value.hpp — let_value(s, f): when s completes with values, f(values)
// returns the next sender, which runs and gives the result.
#pragma once

#include <exception>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ringio/exec/connect.hpp"
#include "ringio/exec/manual_lifetime.hpp"
#include "ringio/exec/pipe.hpp"
#include "ringio/exec/sender_traits.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

template <class F, class Args>
struct let_next;
template <class F, class... A>
struct let_next<F, type_list<A...>> {
  using type = std::decay_t<std::invoke_result_t<F, A&...>>;
};

template <class S, class F, class R>
class let_state {
  using values_t = value_tuple_of_t<S, env_of_t<R>>;
  using next_t = typename let_next<F, value_args_of_t<S, env_of_t<R>>>::type;

  struct first_receiver {
    using receiver_concept = receiver_t;
    let_state* self;
    template <class... A>
    void set_value(A&&... a) noexcept {
      self->on_value(std::forward<A>(a)...);
    }
    template <class E>
    void set_error(E&& e) noexcept {
      std::move(self->rcvr_).set_error(std::forward<E>(e));
    }
    void set_stopped() noexcept { std::move(self->rcvr_).set_stopped(); }
    env_of_t<R> get_env() const noexcept { return exec::get_env(self->rcvr_); }
  };
  struct second_receiver {
    using receiver_concept = receiver_t;
    let_state* self;
    template <class... A>
    void set_value(A&&... a) noexcept {
      std::move(self->rcvr_).set_value(std::forward<A>(a)...);
    }
    template <class E>
    void set_error(E&& e) noexcept {
      std::move(self->rcvr_).set_error(std::forward<E>(e));
    }
    void set_stopped() noexcept { std::move(self->rcvr_).set_stopped(); }
    env_of_t<R> get_env() const noexcept { return exec::get_env(self->rcvr_); }
  };
  using first_op = connect_result_t<S, first_receiver>;
  using second_op = connect_result_t<next_t, second_receiver>;

 public:
  using operation_state_concept = operation_state_t;

  let_state(S&& s, F f, R r) : fn_(std::move(f)), rcvr_(std::move(r)) {
    first_.construct_with([&] { return exec::connect(std::move(s), first_receiver{this}); });
  }
  let_state(const let_state&) = delete;
  let_state& operator=(const let_state&) = delete;
  ~let_state() {
    first_.destroy();
    if (second_live_) second_.destroy();
  }

  void start() & noexcept { first_.get().start(); }

 private:
  template <class... A>
  void on_value(A&&... a) noexcept {
    try {
      values_.emplace(std::forward<A>(a)...);
      auto& next =
          second_.construct_with([&] { return exec::connect(std::apply(fn_, *values_), second_receiver{this}); });
      second_live_ = true;
      next.start();
    } catch (...) {
      std::move(rcvr_).set_error(std::current_exception());
    }
  }

  F fn_;
  R rcvr_;
  std::optional<values_t> values_;  // kept alive while the next sender runs
  manual_lifetime<first_op> first_;
  manual_lifetime<second_op> second_;
  bool second_live_ = false;
};

}  // namespace detail
/// @endcond

/// The sender of let_value().
template <class S, class F>
class let_value_sender {
  template <class Env>
  using next_t = typename detail::let_next<F, value_args_of_t<S, Env>>::type;

 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// The values of the next sender; the errors of both plus std::exception_ptr; stopped
  /// (both in the receiver's environment `Env`).
  template <class Env>
  auto get_completion_signatures(const Env&) const -> typename detail::make_completions<
      value_args_of_t<next_t<Env>, Env>,
      detail::unique_t<detail::concat_t<error_types_of_t<S, Env>, error_types_of_t<next_t<Env>, Env>,
                                        detail::type_list<std::exception_ptr>>>>::type {
    return {};
  }

  /// Holds `s` and `f`.
  let_value_sender(S s, F f) : s_(std::move(s)), f_(std::move(f)) {}

  /// The operation state: runs S, then f(values) as the next sender.
  template <class R>
  detail::let_state<S, F, std::decay_t<R>> connect(R&& r) && {
    return {std::move(s_), std::move(f_), std::forward<R>(r)};
  }

 private:
  S s_;
  F f_;
};

/// When `s` completes with `v...`, calls `f(v...)` (the values stay alive, f gets
/// references) and runs the sender it returns; its completion is the result. Errors
/// and stops of `s` pass through; an exception from f is set_error(exception_ptr).
/// Both senders obey the receiver's stop token.
template <class S, class F>
[[nodiscard]] let_value_sender<std::decay_t<S>, std::decay_t<F>> let_value(S&& s, F&& f) {
  return {std::forward<S>(s), std::forward<F>(f)};
}

/// `s | let_value(f)`.
template <class F>
[[nodiscard]] auto let_value(F&& f) {
  return closure{[f = std::forward<F>(f)](auto&& s) mutable {
    return exec::let_value(std::forward<decltype(s)>(s), std::move(f));
  }};
}

}  // namespace ringio::exec
