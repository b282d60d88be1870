// SPDX-License-Identifier: Apache-2.0
// ringio/exec/when_all.hpp — when_all(s...): runs every sender at once; completes with
// all their values, or with the first error or stop after stopping the others.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
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

template <class R, class... S>
class when_all_state {
  using parent_env = env_of_t<R>;
  using child_env = stop_child_env_t<parent_env>;
  using errors = unique_t<concat_t<error_types_of_t<S, child_env>...>>;

  template <std::size_t I>
  struct child_receiver {
    using receiver_concept = receiver_t;
    when_all_state* self;
    template <class... A>
    void set_value(A&&... a) noexcept {
      std::get<I>(self->values_).emplace(std::forward<A>(a)...);
      self->arrive();
    }
    template <class E>
    void set_error(E&& e) noexcept {
      int expected = 0;
      if (self->status_.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        self->failure_.set_error(std::forward<E>(e));
        self->link_.source.request_stop();
      }
      self->arrive();
    }
    void set_stopped() noexcept {
      int expected = 0;
      if (self->status_.compare_exchange_strong(expected, 2, std::memory_order_acq_rel))
        self->link_.source.request_stop();
      self->arrive();
    }
    child_env get_env() const noexcept {
      return exec::with_stop_token(exec::get_env(self->rcvr_), self->link_.source.get_token());
    }
  };

  template <class Idx>
  struct ops_for;
  template <std::size_t... I>
  struct ops_for<std::index_sequence<I...>> {
    using type = std::tuple<manual_lifetime<connect_result_t<S, child_receiver<I>>>...>;
  };

 public:
  using operation_state_concept = operation_state_t;

  when_all_state(std::tuple<S...>&& senders, R r) : rcvr_(std::move(r)) {
    construct_all(ops_, [&]<std::size_t I>(auto& op, std::integral_constant<std::size_t, I>) {
      op.construct_with([&] { return exec::connect(std::move(std::get<I>(senders)), child_receiver<I>{this}); });
    });
  }
  when_all_state(const when_all_state&) = delete;
  when_all_state& operator=(const when_all_state&) = delete;
  ~when_all_state() {
    std::apply([](auto&... op) { (op.destroy(), ...); }, ops_);
  }

  void start() & noexcept {
    link_.link(exec::get_stop_token(exec::get_env(rcvr_)));
    std::apply([](auto&... op) { (op.get().start(), ...); }, ops_);
  }

 private:
  void arrive() noexcept {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    link_.unlink();
    int status = status_.load(std::memory_order_acquire);
    if (status == 1) {
      failure_.deliver_error(rcvr_);
    } else if (status == 2) {
      std::move(rcvr_).set_stopped();
    } else {
      std::apply(
          [&](auto&... opt) {
            auto all = std::tuple_cat(std::move(*opt)...);
            std::apply([&](auto&... v) { std::move(rcvr_).set_value(std::move(v)...); }, all);
          },
          values_);
    }
  }

  R rcvr_;
  stop_link<stop_token_of_t<parent_env>> link_;
  std::tuple<std::optional<value_tuple_of_t<S, child_env>>...> values_;
  outcome<std::tuple<>, errors> failure_;
  std::atomic<int> status_{0};  // 0 running, 1 an error, 2 stopped
  std::atomic<std::size_t> remaining_{sizeof...(S)};
  typename ops_for<std::index_sequence_for<S...>>::type ops_;
};

}  // namespace detail
/// @endcond

/// The sender of when_all().
template <class... S>
class when_all_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// set_value(every value of every sender, in order), any error of any, stopped: their
  /// completions in the receiver's environment `Env` with when_all's stop token.
  template <class Env, class ChildEnv = detail::stop_child_env_t<Env>>
  auto get_completion_signatures(const Env&) const ->
      typename detail::make_completions<detail::concat_t<value_args_of_t<S, ChildEnv>...>,
                                        detail::unique_t<detail::concat_t<error_types_of_t<S, ChildEnv>...>>>::type {
    return {};
  }

  /// Holds the senders.
  explicit when_all_sender(S... s) : senders_(std::move(s)...) {}

  /// The operation state: every child connected, none started.
  template <class R>
  detail::when_all_state<std::decay_t<R>, S...> connect(R&& r) && {
    return {std::move(senders_), std::forward<R>(r)};
  }

 private:
  std::tuple<S...> senders_;
};

/// Starts every sender at once and completes when all have completed: with the values
/// of all of them (concatenated in order) when each completed with a value; otherwise
/// with the first error (or set_stopped() if a child stopped first), after stopping the
/// others and waiting for them. The receiver's stop token stops every child. Children
/// may complete on any thread; the last one completes the receiver.
template <class... S>
[[nodiscard]] when_all_sender<std::decay_t<S>...> when_all(S&&... s) {
  return when_all_sender<std::decay_t<S>...>(std::forward<S>(s)...);
}

}  // namespace ringio::exec
