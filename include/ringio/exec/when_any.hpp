// SPDX-License-Identifier: Apache-2.0
// ringio/exec/when_any.hpp — when_any(s...): the first sender to complete gives the
// result; the others are stopped and waited for.
#pragma once

#include <atomic>
#include <cstddef>
#include <tuple>
#include <utility>

#include "ringio/exec/connect.hpp"
#include "ringio/exec/env.hpp"
#include "ringio/exec/manual_lifetime.hpp"
#include "ringio/exec/outcome.hpp"
#include "ringio/exec/sender_traits.hpp"
#include "ringio/exec/stop_link.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

// The value signatures of the children that have one (in environment Env): `one` when
// they agree, and `type` that one (senders that disagree get an empty list, so that the
// static_assert of get_completion_signatures is the only error reported).
template <class Values>
struct when_any_value {
  static constexpr bool one = false;
  using type = type_list<>;
};
template <>
struct when_any_value<type_list<>> {  // none completes with a value
  static constexpr bool one = true;
  using type = type_list<>;
};
template <class Args>
struct when_any_value<type_list<Args>> {
  static constexpr bool one = true;
  using type = Args;
};

template <class Env, class... S>
using any_values_t = when_any_value<unique_t<concat_t<
    std::conditional_t<std::is_same_v<typename sigs_info<completion_signatures_of_t<S, Env>>::values, type_list<>>,
                       type_list<>, type_list<value_args_of_t<S, Env>>>...>>>;

// The one value signature shared by the children that have one (in environment Env).
template <class Env, class... S>
using any_value_args_t = typename any_values_t<Env, S...>::type;

template <class R, class... S>
class when_any_state {
  using parent_env = env_of_t<R>;
  using child_env = stop_child_env_t<parent_env>;
  using errors = unique_t<concat_t<error_types_of_t<S, child_env>...>>;
  using values_t = typename args_tuple<any_value_args_t<child_env, S...>>::type;

  struct child_receiver {
    using receiver_concept = receiver_t;
    when_any_state* self;
    template <class... A>
    void set_value(A&&... a) noexcept {
      if constexpr (any_values_t<child_env, S...>::one) {  // else get_completion_signatures said why
        if (self->win()) self->result_.set_value(std::forward<A>(a)...);
      }
      self->arrive();
    }
    template <class E>
    void set_error(E&& e) noexcept {
      if (self->win()) self->result_.set_error(std::forward<E>(e));
      self->arrive();
    }
    void set_stopped() noexcept {
      (void)self->win();
      self->arrive();
    }
    child_env get_env() const noexcept {
      return exec::with_stop_token(exec::get_env(self->rcvr_), self->link_.source.get_token());
    }
  };

 public:
  using operation_state_concept = operation_state_t;

  when_any_state(std::tuple<S...>&& senders, R r) : rcvr_(std::move(r)) {
    construct_all(ops_, [&]<std::size_t I>(auto& op, std::integral_constant<std::size_t, I>) {
      op.construct_with([&] { return exec::connect(std::move(std::get<I>(senders)), child_receiver{this}); });
    });
  }
  when_any_state(const when_any_state&) = delete;
  when_any_state& operator=(const when_any_state&) = delete;
  ~when_any_state() {
    std::apply([](auto&... op) { (op.destroy(), ...); }, ops_);
  }

  void start() & noexcept {
    link_.link(exec::get_stop_token(exec::get_env(rcvr_)));
    std::apply([](auto&... op) { (op.get().start(), ...); }, ops_);
  }

 private:
  bool win() noexcept {
    if (won_.exchange(true, std::memory_order_acq_rel)) return false;
    link_.source.request_stop();  // the losers: their real results, if they win a race, are dropped
    return true;
  }
  void arrive() noexcept {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    link_.unlink();
    result_.deliver(rcvr_);
  }

  R rcvr_;
  stop_link<stop_token_of_t<parent_env>> link_;
  outcome<values_t, errors> result_;
  std::atomic<bool> won_{false};
  std::atomic<std::size_t> remaining_{sizeof...(S)};
  std::tuple<manual_lifetime<connect_result_t<S, child_receiver>>...> ops_;
};

}  // namespace detail
/// @endcond

/// The sender of when_any().
template <class... S>
class when_any_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// The value signature the children share, any error of any child, stopped: their
  /// completions in the receiver's environment `Env` with when_any's stop token.
  template <class Env, class ChildEnv = detail::stop_child_env_t<Env>>
  auto get_completion_signatures(const Env&) const {
    static_assert(detail::any_values_t<ChildEnv, S...>::one,
                  "ringio::exec::when_any: the senders complete with different values. Give them one value "
                  "type (exec::then on each), or co_await ringio::when_any of tasks, which gives a std::variant");
    return
        typename detail::make_completions<detail::any_value_args_t<ChildEnv, S...>,
                                          detail::unique_t<detail::concat_t<error_types_of_t<S, ChildEnv>...>>>::type{};
  }

  /// Holds the senders.
  explicit when_any_sender(S... s) : senders_(std::move(s)...) {}

  /// The operation state: every child connected, none started.
  template <class R>
  detail::when_any_state<std::decay_t<R>, S...> connect(R&& r) && {
    return {std::move(senders_), std::forward<R>(r)};
  }

 private:
  std::tuple<S...> senders_;
};

/// Starts every sender at once; the first to complete (value, error or stopped) gives
/// the result. The others are then stopped through their environment's stop token and
/// waited for: the receiver completes only when every child has completed, so none
/// outlives the operation. Senders that never complete with a value (an error after a
/// delay, say) may join any others; the others must share one value signature. The
/// receiver's stop token stops every child (the result is then set_stopped(), unless a
/// child had already completed otherwise).
template <class... S>
[[nodiscard]] when_any_sender<std::decay_t<S>...> when_any(S&&... s) {
  return when_any_sender<std::decay_t<S>...>(std::forward<S>(s)...);
}

}  // namespace ringio::exec
