// SPDX-License-Identifier: Apache-2.0
// ringio/detail/promise_base.hpp — what every ringio task promise carries: where to go
// when it finishes, its exception, and the stop token its operations obey by default.
#pragma once

#include <coroutine>
#include <exception>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "ringio/detail/frame_allocator.hpp"
#include "ringio/detail/resume_loop.hpp"

namespace ringio::detail {

class promise_base;

/// The ringio task running on this thread right now (null between tasks). Set each
/// time a task resumes, cleared when it suspends or ends; a scope created inside a
/// task reads it to inherit that task's stop token.
inline thread_local promise_base* running_task = nullptr;

template <class A>
concept has_member_co_await = requires(A&& a) { std::forward<A>(a).operator co_await(); };

/// Awaits a sender inside a task; defined in ringio/exec/sender_awaiter.hpp, which a
/// translation unit that awaits senders includes (ringio/exec.hpp does).
template <class S>
class sender_awaiter;

/// A sender (it names a sender_concept) that is not already awaitable.
template <class A>
concept awaitable_sender = requires { typename std::remove_cvref_t<A>::sender_concept; } && !has_member_co_await<A> &&
                           !requires(std::remove_cvref_t<A>& a) { a.await_ready(); };

/// Wraps what a task awaits so that resuming the task marks it as the running one.
/// `Aw` is a reference (the awaited temporary lives until the end of the full
/// expression, across the suspension) or, for operator co_await results, a value.
template <class Aw>
struct resume_marker {
  Aw inner;
  promise_base* task;
  bool await_ready() { return inner.await_ready(); }
  template <class H>
  decltype(auto) await_suspend(H h) {
    running_task = nullptr;
    return inner.await_suspend(h);
  }
  decltype(auto) await_resume() {
    running_task = task;
    return inner.await_resume();
  }
};

/// Resumes `h` inline (from inside a task, or from the loop) on a resumption loop of
/// its own, and restores the running-task mark after.
inline void resume_inline(std::coroutine_handle<> h) {
  promise_base* saved = running_task;
  resume_flat(h);
  running_task = saved;
}

/// Receives a finished task instead of a continuation (scope children, when_all
/// branches, sync_wait roots). Returns the coroutine to run next (noop if none).
class completion_sink {
 public:
  virtual std::coroutine_handle<> on_task_done(std::coroutine_handle<> task, promise_base& p) noexcept = 0;

 protected:
  ~completion_sink() = default;
};

class promise_base {
 public:
  struct initial_awaiter {
    promise_base* self;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    void await_resume() const noexcept { running_task = self; }
  };

  struct final_awaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      running_task = nullptr;
      promise_base& p = h.promise();
      if (p.sink_ != nullptr) return to_sink(h, p);
      return p.continuation_ ? hand_over(h.address(), p.continuation_) : std::noop_coroutine();
    }
    // Out of line: inlined, its call would make every task's resume function keep a
    // register across it, which costs the hot path of a task switch a push and a pop.
    [[gnu::noinline]] static std::coroutine_handle<> to_sink(std::coroutine_handle<> h, promise_base& p) noexcept {
      void* self = h.address();  // the sink may destroy the frame
      return hand_over(self, p.sink_->on_task_done(h, p));
    }
    void await_resume() const noexcept {}
  };

  initial_awaiter initial_suspend() noexcept { return {this}; }
  final_awaiter final_suspend() const noexcept { return {}; }

  // Not noexcept: awaiting a sender connects it, and a connect that throws throws
  // from the co_await, into the task.
  template <class A>
  auto await_transform(A&& a) {
    if constexpr (has_member_co_await<A>) {
      using Aw = decltype(std::forward<A>(a).operator co_await());
      return resume_marker<Aw>{std::forward<A>(a).operator co_await(), this};
    } else if constexpr (awaitable_sender<A>) {
      using Aw = sender_awaiter<std::remove_cvref_t<A>>;
      return resume_marker<Aw>{Aw(std::forward<A>(a), token_), this};
    } else {
      return resume_marker<A&&>{std::forward<A>(a), this};
    }
  }
  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  static void* operator new(std::size_t n) { return frame_allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { frame_deallocate(p, n); }

  void set_continuation(std::coroutine_handle<> c) noexcept { continuation_ = c; }
  void set_sink(completion_sink* s) noexcept { sink_ = s; }
  /// The stop token this task's operations use when none is passed explicitly
  /// (nullptr: not cancellable). Points into an object that outlives the task.
  const std::stop_token* stop_token() const noexcept { return token_; }
  void set_stop_token(const std::stop_token* t) noexcept { token_ = t; }
  void inherit_from(const promise_base& parent) noexcept { token_ = parent.token_; }

  [[nodiscard]] bool failed() const noexcept { return static_cast<bool>(exception_); }
  std::exception_ptr exception() const noexcept { return exception_; }
  void rethrow_if_failed() const {
    if (exception_) std::rethrow_exception(exception_);
  }

 private:
  std::coroutine_handle<> continuation_;
  completion_sink* sink_ = nullptr;
  const std::stop_token* token_ = nullptr;
  std::exception_ptr exception_;
};

}  // namespace ringio::detail
