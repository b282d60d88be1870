// SPDX-License-Identifier: Apache-2.0
// ringio/exec/repeat_until.hpp — repeat_until(make): runs make()'s sender again and
// again until it completes with true.
#pragma once

#include <exception>
#include <type_traits>
#include <utility>

#include "ringio/exec/connect.hpp"
#include "ringio/exec/manual_lifetime.hpp"
#include "ringio/exec/sender_traits.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

template <class Make, class R>
class repeat_state {
  using body_t = std::decay_t<std::invoke_result_t<Make&>>;

  struct body_receiver {
    using receiver_concept = receiver_t;
    repeat_state* self;
    void set_value(bool done) noexcept { self->on_round(done); }
    template <class E>
    void set_error(E&& e) noexcept {
      self->finish();
      std::move(self->rcvr_).set_error(std::forward<E>(e));
    }
    void set_stopped() noexcept {
      self->finish();
      std::move(self->rcvr_).set_stopped();
    }
    env_of_t<R> get_env() const noexcept { return exec::get_env(self->rcvr_); }
  };
  using body_op = connect_result_t<body_t, body_receiver>;

 public:
  using operation_state_concept = operation_state_t;

  repeat_state(Make make, R r) : make_(std::move(make)), rcvr_(std::move(r)) {}
  repeat_state(const repeat_state&) = delete;
  repeat_state& operator=(const repeat_state&) = delete;
  ~repeat_state() {
    if (gone_ != nullptr) *gone_ = true;
    finish();
  }

  void start() & noexcept { run(); }

 private:
  void finish() noexcept {
    if (live_) body_.destroy();
    live_ = false;
  }
  void on_round(bool done) noexcept {
    if (done) {
      finish();
      std::move(rcvr_).set_value();
      return;
    }
    if (starting_) {  // completed inside start(): the loop in run() goes on (no recursion)
      again_ = true;
      return;
    }
    run();
  }
  // Starts rounds until one stays pending: a round completing inline does not grow the stack.
  void run() noexcept {
    for (;;) {
      finish();
      try {
        body_.construct_with([&] { return exec::connect(make_(), body_receiver{this}); });
      } catch (...) {
        gone_ = nullptr;  // no round is starting (and no local is pointed to)
        std::move(rcvr_).set_error(std::current_exception());
        return;
      }
      live_ = true;
      again_ = false;
      starting_ = true;
      // A last round that completes inside start() hands its result to the receiver at
      // once, and the receiver may destroy this state before start() returns (a task
      // that resumes and ends frees its frame): then nothing here may be touched again.
      bool gone = false;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"  // reset below, or the state is gone
#endif
      gone_ = &gone;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
      body_.get().start();
      if (gone) return;
      gone_ = nullptr;
      starting_ = false;  // RACE-free: a pending round completes on this loop, later
      if (!again_) return;
    }
  }

  Make make_;
  R rcvr_;
  manual_lifetime<body_op> body_;
  bool* gone_ = nullptr;  // set while a round starts: the destructor marks it
  bool live_ = false;
  bool starting_ = false;
  bool again_ = false;
};

}  // namespace detail
/// @endcond

/// The sender of repeat_until().
template <class Make>
class repeat_until_sender {
  using body_t = std::decay_t<std::invoke_result_t<Make&>>;

 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// set_value() after a round gave true; the errors of a round (in the receiver's
  /// environment `Env`) plus exception_ptr; stopped.
  template <class Env>
  auto get_completion_signatures(const Env&) const -> typename detail::make_completions<
      detail::type_list<>,
      detail::unique_t<detail::concat_t<error_types_of_t<body_t, Env>, detail::type_list<std::exception_ptr>>>>::type {
    return {};
  }

  /// Holds the factory.
  explicit repeat_until_sender(Make make) : make_(std::move(make)) {}

  /// The operation state.
  template <class R>
  detail::repeat_state<Make, std::decay_t<R>> connect(R&& r) && {
    return {std::move(make_), std::forward<R>(r)};
  }

 private:
  Make make_;
};

/// A loop: connects and starts `make()` (a sender completing with a bool), and again
/// after each round that gave false; completes with set_value() after a round that
/// gave true. The first error or stop of a round ends the loop with it (an exception
/// from make() is set_error(exception_ptr)). Every round obeys the receiver's stop
/// token. Rounds that complete inline are run iteratively, not recursively; each round's
/// operation state lives in the loop's own state (no allocation).
template <class Make>
[[nodiscard]] repeat_until_sender<std::decay_t<Make>> repeat_until(Make&& make) {
  return repeat_until_sender<std::decay_t<Make>>(std::forward<Make>(make));
}

}  // namespace ringio::exec
