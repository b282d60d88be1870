// SPDX-License-Identifier: Apache-2.0
// ringio/exec/starts_on.hpp — starts_on(sched, s): s starts on the scheduler's loop.
#pragma once

#include <utility>

#include "ringio/exec/connect.hpp"
#include "ringio/exec/env.hpp"
#include "ringio/exec/manual_lifetime.hpp"
#include "ringio/exec/scheduler.hpp"
#include "ringio/exec/sender_traits.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

template <class S, class R>
class starts_on_state {
  struct hop_receiver {
    using receiver_concept = receiver_t;
    starts_on_state* self;
    void set_value() noexcept { self->child_.get().start(); }
    template <class E>
    void set_error(E&& e) noexcept {
      std::move(self->rcvr_).set_error(std::forward<E>(e));
    }
    void set_stopped() noexcept { std::move(self->rcvr_).set_stopped(); }
    env_of_t<R> get_env() const noexcept { return exec::get_env(self->rcvr_); }
  };
  struct child_receiver {
    using receiver_concept = receiver_t;
    starts_on_state* self;
    template <class... A>
    void set_value(A&&... a) noexcept {
      std::move(self->rcvr_).set_value(std::forward<A>(a)...);
    }
    template <class E>
    void set_error(E&& e) noexcept {
      std::move(self->rcvr_).set_error(std::forward<E>(e));
    }
    void set_stopped() noexcept { std::move(self->rcvr_).set_stopped(); }
    env_with<env_of_t<R>, get_scheduler_t, scheduler> get_env() const noexcept {
      return exec::with_scheduler(exec::get_env(self->rcvr_), self->sched_);
    }
  };

 public:
  using operation_state_concept = operation_state_t;

  starts_on_state(scheduler sched, S&& s, R r) : sched_(sched), rcvr_(std::move(r)) {
    hop_.construct_with([&] { return exec::connect(sched_.schedule(), hop_receiver{this}); });
    try {
      child_.construct_with([&] { return exec::connect(std::move(s), child_receiver{this}); });
    } catch (...) {
      hop_.destroy();
      throw;
    }
  }
  starts_on_state(const starts_on_state&) = delete;
  starts_on_state& operator=(const starts_on_state&) = delete;
  ~starts_on_state() {
    child_.destroy();
    hop_.destroy();
  }

  void start() & noexcept { hop_.get().start(); }

 private:
  scheduler sched_;
  R rcvr_;
  manual_lifetime<connect_result_t<schedule_sender, hop_receiver>> hop_;
  manual_lifetime<connect_result_t<S, child_receiver>> child_;
};

}  // namespace detail
/// @endcond

/// The sender of starts_on().
template <class S>
class starts_on_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// The completions of S (plus those of the hop: an error, stopped), S seeing the
  /// receiver's environment `Env` with `sched` as its scheduler.
  template <class Env, class ChildEnv = env_with<Env, get_scheduler_t, scheduler>>
  auto get_completion_signatures(const Env&) const -> typename detail::make_completions<
      value_args_of_t<S, ChildEnv>,
      detail::unique_t<detail::concat_t<error_types_of_t<S, ChildEnv>, detail::type_list<std::error_code>>>>::type {
    return {};
  }

  /// Holds the scheduler and the sender.
  starts_on_sender(scheduler sched, S s) : sched_(sched), s_(std::move(s)) {}

  /// The operation state.
  template <class R>
  detail::starts_on_state<S, std::decay_t<R>> connect(R&& r) && {
    return {sched_, std::move(s_), std::forward<R>(r)};
  }

 private:
  scheduler sched_;
  S s_;
};

/// Runs `s` on the loop of `sched` (from any thread: the start is posted to that loop)
/// and completes there with what `s` gives. The receiver's stop token reaches `s`; a
/// stop before the hop completes with set_stopped() and never starts `s`. Children see
/// `sched` as their environment's get_scheduler.
template <class S>
[[nodiscard]] starts_on_sender<std::decay_t<S>> starts_on(scheduler sched, S&& s) {
  return {sched, std::forward<S>(s)};
}

}  // namespace ringio::exec
