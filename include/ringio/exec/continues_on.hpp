// SPDX-License-Identifier: Apache-2.0
// ringio/exec/continues_on.hpp — continues_on(s, sched): s runs where it was started;
// its completion is delivered on the scheduler's loop.
#pragma once

#include <utility>

#include "ringio/exec/connect.hpp"
#include "ringio/exec/env.hpp"
#include "ringio/exec/manual_lifetime.hpp"
#include "ringio/exec/outcome.hpp"
#include "ringio/exec/pipe.hpp"
#include "ringio/exec/scheduler.hpp"
#include "ringio/exec/sender_traits.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

template <class S, class R>
class continues_on_state {
  struct child_receiver {
    using receiver_concept = receiver_t;
    continues_on_state* self;
    template <class... A>
    void set_value(A&&... a) noexcept {
      self->result_.set_value(std::forward<A>(a)...);
      self->hop_.get().start();
    }
    template <class E>
    void set_error(E&& e) noexcept {
      self->result_.set_error(std::forward<E>(e));
      self->hop_.get().start();
    }
    void set_stopped() noexcept { self->hop_.get().start(); }
    env_of_t<R> get_env() const noexcept { return exec::get_env(self->rcvr_); }
  };
  // The hop ignores stop requests: a result already received is never dropped.
  struct hop_receiver {
    using receiver_concept = receiver_t;
    continues_on_state* self;
    void set_value() noexcept { self->result_.deliver(self->rcvr_); }
    template <class E>
    void set_error(E&& e) noexcept {
      std::move(self->rcvr_).set_error(std::forward<E>(e));
    }
    void set_stopped() noexcept { self->result_.deliver(self->rcvr_); }
    empty_env get_env() const noexcept { return {}; }
  };

 public:
  using operation_state_concept = operation_state_t;

  continues_on_state(S&& s, scheduler sched, R r) : rcvr_(std::move(r)) {
    hop_.construct_with([&] { return exec::connect(sched.schedule(), hop_receiver{this}); });
    try {
      child_.construct_with([&] { return exec::connect(std::move(s), child_receiver{this}); });
    } catch (...) {
      hop_.destroy();
      throw;
    }
  }
  continues_on_state(const continues_on_state&) = delete;
  continues_on_state& operator=(const continues_on_state&) = delete;
  ~continues_on_state() {
    child_.destroy();
    hop_.destroy();
  }

  void start() & noexcept { child_.get().start(); }

 private:
  R rcvr_;
  outcome<value_tuple_of_t<S, env_of_t<R>>, error_types_of_t<S, env_of_t<R>>> result_;
  manual_lifetime<connect_result_t<schedule_sender, hop_receiver>> hop_;
  manual_lifetime<connect_result_t<S, child_receiver>> child_;
};

}  // namespace detail
/// @endcond

/// The sender of continues_on().
template <class S>
class continues_on_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// The completions of S in the receiver's environment `Env` (plus std::error_code
  /// from the hop).
  template <class Env>
  auto get_completion_signatures(const Env&) const -> typename detail::make_completions<
      value_args_of_t<S, Env>,
      detail::unique_t<detail::concat_t<error_types_of_t<S, Env>, detail::type_list<std::error_code>>>>::type {
    return {};
  }

  /// Holds the sender and the scheduler.
  continues_on_sender(S s, scheduler sched) : s_(std::move(s)), sched_(sched) {}

  /// The operation state.
  template <class R>
  detail::continues_on_state<S, std::decay_t<R>> connect(R&& r) && {
    return {std::move(s_), sched_, std::forward<R>(r)};
  }

 private:
  S s_;
  scheduler sched_;
};

/// Runs `s` where it is started, then completes the receiver on the loop of `sched`
/// (posted through its inbox: safe across threads) with what `s` gave: values,
/// error or stopped, moved across unchanged. The receiver's stop token reaches `s`;
/// the hop itself is not cancellable, so a result is never lost on the way.
template <class S>
[[nodiscard]] continues_on_sender<std::decay_t<S>> continues_on(S&& s, scheduler sched) {
  return {std::forward<S>(s), sched};
}

/// `s | continues_on(sched)`.
[[nodiscard]] inline auto continues_on(scheduler sched) {
  return closure{[sched](auto&& s) { return exec::continues_on(std::forward<decltype(s)>(s), sched); }};
}

}  // namespace ringio::exec
