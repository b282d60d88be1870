// SPDX-License-Identifier: Apache-2.0
// ringio/exec/scheduler.hpp — a scheduler for an io_context: schedule() is a sender that
// completes on the loop's thread, from any thread (through the loop's inbox).
#pragma once

#include "ringio/detail/remote_item.hpp"
#include "ringio/exec/tags.hpp"
#include "ringio/io_context.hpp"

namespace ringio::exec {

class scheduler;

/// @cond INTERNAL
namespace detail {

template <class Receiver>
class schedule_state {
 public:
  using operation_state_concept = operation_state_t;

  schedule_state(io_context* loop, Receiver r) noexcept(std::is_nothrow_move_constructible_v<Receiver>)
      : loop_(loop), rcvr_(std::move(r)) {}
  schedule_state(const schedule_state&) = delete;
  schedule_state& operator=(const schedule_state&) = delete;

  void start() & noexcept {
    if (exec::get_stop_token(exec::get_env(rcvr_)).stop_requested()) {
      std::move(rcvr_).set_stopped();
      return;
    }
    io_context* loop = loop_ != nullptr ? loop_ : io_context::current();
    if (loop == nullptr) {
      std::move(rcvr_).set_error(std::make_error_code(std::errc::operation_not_permitted));
      return;
    }
    item_.arg = this;
    item_.run = [](ringio::detail::remote_item& it, io_context&) noexcept {
      auto& self = *static_cast<schedule_state*>(it.arg);
      if (exec::get_stop_token(exec::get_env(self.rcvr_)).stop_requested()) std::move(self.rcvr_).set_stopped();
      else std::move(self.rcvr_).set_value();
    };
    loop->post_remote(item_);
  }

 private:
  io_context* loop_;
  Receiver rcvr_;
  ringio::detail::remote_item item_;
};

}  // namespace detail
/// @endcond

/// The sender of scheduler::schedule(): completes with
/// set_value() on the thread of its io_context, on a later loop iteration, or with
/// set_stopped() when its receiver's stop token was requested before it started or
/// before it ran. No allocation: the request is queued in the operation state.
class schedule_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// How it completes.
  using completion_signatures =
      exec::completion_signatures<set_value_t(), set_error_t(std::error_code), set_stopped_t()>;

  /// Completes on `loop` (not null: its environment names that loop's scheduler).
  explicit schedule_sender(io_context& loop) noexcept : loop_(&loop) {}

  /// The operation state.
  template <class Receiver>
  detail::schedule_state<std::decay_t<Receiver>> connect(Receiver&& r) const {
    return {loop_, std::forward<Receiver>(r)};
  }

#if defined(RINGIO_EXEC_STDEXEC)
  /// @cond INTERNAL
  struct env {
    io_context* loop;
    scheduler query(stdexec::get_completion_scheduler_t<stdexec::set_value_t>) const noexcept;
  };
  env get_env() const noexcept { return {loop_}; }
  /// @endcond
#endif

 private:
  io_context* loop_;
};

/// Schedules work on an io_context: `ringio::exec::scheduler{ctx}`.
class scheduler {
 public:
  using scheduler_concept = scheduler_t;  ///< Marks it a scheduler.

  /// A scheduler for `ctx`, which must outlive it.
  explicit scheduler(io_context& ctx) noexcept : loop_(&ctx) {}

  /// A sender completing on the loop's thread (see schedule_sender).
  [[nodiscard]] schedule_sender schedule() const noexcept { return schedule_sender(*loop_); }
  /// The context it schedules on.
  [[nodiscard]] io_context& context() const noexcept { return *loop_; }
  /// Same context.
  friend bool operator==(const scheduler&, const scheduler&) noexcept = default;

 private:
  io_context* loop_;
};

#if defined(RINGIO_EXEC_STDEXEC)
/// @cond INTERNAL
inline scheduler schedule_sender::env::query(stdexec::get_completion_scheduler_t<stdexec::set_value_t>) const noexcept {
  return scheduler(*loop);
}
/// @endcond
#endif

}  // namespace ringio::exec
