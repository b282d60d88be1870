// ringio/detail/promise_base.hpp — what every ringio task promise carries: where to go
// when it finishes, its exception, and the stop token its operations obey by default.
#pragma once

#include <coroutine>
#include <exception>
#include <stop_token>

#include "ringio/detail/frame_allocator.hpp"

namespace ringio::detail {

class promise_base;

/// Receives a finished task instead of a continuation (scope children, when_all
/// branches, sync_wait roots). Returns the coroutine to run next (noop if none).
class completion_sink {
 public:
  virtual std::coroutine_handle<> on_task_done(std::coroutine_handle<> task,
                                               promise_base& p) noexcept = 0;

 protected:
  ~completion_sink() = default;
};

class promise_base {
 public:
  struct final_awaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      promise_base& p = h.promise();
      if (p.sink_ != nullptr) return p.sink_->on_task_done(h, p);
      return p.continuation_ ? p.continuation_ : std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };

  std::suspend_always initial_suspend() const noexcept { return {}; }
  final_awaiter final_suspend() const noexcept { return {}; }
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
