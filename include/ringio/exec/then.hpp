// SPDX-License-Identifier: Apache-2.0
// ringio/exec/then.hpp — then(s, f): s's values go through f; f's result is the value.
#pragma once

#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

#include "ringio/exec/connect.hpp"
#include "ringio/exec/pipe.hpp"
#include "ringio/exec/sender_traits.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

template <class F, class R>
struct then_receiver {
  using receiver_concept = receiver_t;
  F fn;
  R rcvr;

  template <class... A>
  void set_value(A&&... a) noexcept {
    try {
      if constexpr (std::is_void_v<std::invoke_result_t<F, A...>>) {
        std::invoke(std::move(fn), std::forward<A>(a)...);
        std::move(rcvr).set_value();
      } else {
        std::move(rcvr).set_value(std::invoke(std::move(fn), std::forward<A>(a)...));
      }
    } catch (...) {
      std::move(rcvr).set_error(std::current_exception());
    }
  }
  template <class E>
  void set_error(E&& e) noexcept {
    std::move(rcvr).set_error(std::forward<E>(e));
  }
  void set_stopped() noexcept { std::move(rcvr).set_stopped(); }
  env_of_t<R> get_env() const noexcept { return exec::get_env(rcvr); }
};

template <class F, class Args>
struct then_value;
template <class F, class... A>
struct then_value<F, type_list<A...>> {
  using result = std::invoke_result_t<F, A...>;
  using type = std::conditional_t<std::is_void_v<result>, type_list<>, type_list<result>>;
};

}  // namespace detail
/// @endcond

/// The sender of then().
template <class S, class F>
class then_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// set_value(f(values...)), the errors of S plus std::exception_ptr (f threw), stopped:
  /// S's completions in the receiver's environment `Env`.
  template <class Env>
  auto get_completion_signatures(const Env&) const -> typename detail::make_completions<
      typename detail::then_value<F, value_args_of_t<S, Env>>::type,
      detail::unique_t<detail::concat_t<error_types_of_t<S, Env>, detail::type_list<std::exception_ptr>>>>::type {
    return {};
  }

  /// Holds `s` and `f`.
  then_sender(S s, F f) : s_(std::move(s)), f_(std::move(f)) {}

  /// Connects S to a receiver that calls f first.
  template <class R>
  auto connect(R&& r) && {
    return exec::connect(std::move(s_), detail::then_receiver<F, std::decay_t<R>>{std::move(f_), std::forward<R>(r)});
  }

 private:
  S s_;
  F f_;
};

/// A sender that completes with `f(v...)` when `s` completes with `v...` (set_value()
/// when f returns void). An exception from f becomes set_error(std::exception_ptr);
/// errors and stops of `s` pass through, and so does the stop token of the receiver.
template <class S, class F>
[[nodiscard]] then_sender<std::decay_t<S>, std::decay_t<F>> then(S&& s, F&& f) {
  return {std::forward<S>(s), std::forward<F>(f)};
}

/// `s | then(f)`.
template <class F>
[[nodiscard]] auto then(F&& f) {
  return closure{
      [f = std::forward<F>(f)](auto&& s) mutable { return exec::then(std::forward<decltype(s)>(s), std::move(f)); }};
}

}  // namespace ringio::exec
