// SPDX-License-Identifier: Apache-2.0
// ringio/fiber/fiber_core.hpp — the machine under a fiber: its stack, the context
// switches between the stack and the loop, and the hand-over of an awaitable to the
// task that drives the fiber. The switches are inline: after a stack switch every
// return mispredicts until new calls refill the return stack buffer, so the fewer
// returns between two switches, the cheaper a switch (docs/fibers.md).
#pragma once

#include <cxxabi.h>

#include <boost/context/detail/fcontext.hpp>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <stop_token>
#include <utility>

#include "ringio/fiber/fiber_options.hpp"
#include "ringio/fiber/fiber_stack.hpp"
#include "ringio/task.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define RINGIO_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define RINGIO_FIBER_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(RINGIO_FIBER_ASAN)
#define RINGIO_FIBER_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(RINGIO_FIBER_TSAN)
#define RINGIO_FIBER_TSAN 1
#endif
#endif
#ifdef RINGIO_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef RINGIO_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ringio {

/// @cond INTERNAL
namespace detail {

/// The handle every awaitable awaited in a fiber receives: the driving task's.
using fiber_driver_handle = std::coroutine_handle<task_promise<void>>;

/// Calls the await_suspend of a type-erased awaiter with the driver's handle and
/// returns the coroutine to run next (the driver itself: continue the fiber at once).
/// An exception of await_suspend is stored in `error`.
using fiber_suspend_fn = std::coroutine_handle<> (*)(void* awaiter, fiber_driver_handle driver,
                                                     std::exception_ptr& error) noexcept;

/// Thrown inside a fiber whose owner is destroyed before it finished, to unwind its
/// stack. Not a std::exception; code that catches it with `catch (...)` must rethrow.
struct fiber_unwind {};

class fiber_core;

/// The fiber running on this thread right now (null outside fibers).
inline thread_local fiber_core* running_fiber = nullptr;

/// The layout of __cxa_eh_globals in the Itanium C++ ABI (libstdc++ and libc++abi):
/// the exceptions being handled and the count of those thrown and not yet caught.
struct eh_globals {
  void* caught = nullptr;
  unsigned int uncaught = 0;
};

inline thread_local eh_globals* thread_eh_cache = nullptr;

/// The calling thread's C++ exception state.
inline eh_globals& thread_eh_globals() noexcept {
  if (thread_eh_cache == nullptr) thread_eh_cache = reinterpret_cast<eh_globals*>(abi::__cxa_get_globals());
  return *thread_eh_cache;
}

/// One fiber: a stack and the state of the switches. Lives in the frame of the task
/// that runs it (make_fiber.hpp); the loop side is that task (drive_fiber), the fiber
/// side is the code on the stack.
class fiber_core {
 public:
  /// Runs on the fiber's stack; must catch everything but fiber_unwind.
  using entry_fn = void (*)(void* arg);

  fiber_core(const fiber_options& opts, entry_fn entry, void* arg) noexcept : opts_(opts), entry_(entry), arg_(arg) {}
  /// Unwinds a fiber that started and did not finish (its destructors run), then gives
  /// its stack back to the pool.
  ~fiber_core();
  fiber_core(const fiber_core&) = delete;
  fiber_core& operator=(const fiber_core&) = delete;

  // ---- loop side ----
  /// Runs the fiber (taking a stack at the first call) until it suspends or finishes.
  void switch_in() {
    if (!started_) start();
    fiber_core* outer = std::exchange(running_fiber, this);
    // Each side keeps its own exception state: a fiber may suspend in a catch block.
    eh_globals& eh = thread_eh_globals();
    const eh_globals outside = eh;
    eh = eh_;
#ifdef RINGIO_FIBER_TSAN
    tsan_caller_ = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(tsan_fiber_, 0);
#endif
#ifdef RINGIO_FIBER_ASAN
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, stack_.bottom(), stack_.size());
#endif
    boost::context::detail::transfer_t t = boost::context::detail::jump_fcontext(fiber_ctx_, this);
#ifdef RINGIO_FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
    fiber_ctx_ = t.fctx;
    eh_ = eh;
    eh = outside;
    running_fiber = outer;
    if (finished_) release();
  }
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// The awaiter the fiber suspended on: calls its await_suspend with `driver`.
  std::coroutine_handle<> suspend_awaiter(fiber_driver_handle driver) noexcept {
    return suspend_(awaiter_, driver, error_);
  }
  void bind_driver(task_promise<void>& p) noexcept { driver_ = &p; }

  // ---- fiber side ----
  /// Hands `awaiter` to the driver and switches to the loop until the driver is
  /// resumed. Rethrows an exception of the awaiter's await_suspend; throws
  /// fiber_unwind when the fiber is being destroyed.
  void suspend(void* awaiter, fiber_suspend_fn fn) {
    awaiter_ = awaiter;
    suspend_ = fn;
    switch_out();
    if (unwinding_) throw fiber_unwind{};
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }
  /// Throws fiber_unwind when the fiber is being destroyed.
  void check_unwinding() const {
    if (unwinding_) throw fiber_unwind{};
  }
  /// The stop token of the task that drives the fiber (null: none).
  [[nodiscard]] const std::stop_token* stop_token() const noexcept {
    return driver_ != nullptr ? driver_->stop_token() : nullptr;
  }
  /// The fiber running on this thread right now, or null.
  [[nodiscard]] static fiber_core* current() noexcept { return running_fiber; }

 private:
  friend struct fiber_entry;
  void start();             // takes a stack and makes the fiber's first context
  void release() noexcept;  // after the last switch: the stack goes back to the pool
  void switch_out() {
#ifdef RINGIO_FIBER_ASAN
    __sanitizer_start_switch_fiber(&asan_fake_stack_, caller_bottom_, caller_size_);
#endif
#ifdef RINGIO_FIBER_TSAN
    __tsan_switch_to_fiber(tsan_caller_, 0);
#endif
    boost::context::detail::transfer_t t = boost::context::detail::jump_fcontext(caller_ctx_, nullptr);
    caller_ctx_ = t.fctx;
#ifdef RINGIO_FIBER_ASAN
    __sanitizer_finish_switch_fiber(asan_fake_stack_, &caller_bottom_, &caller_size_);
#endif
  }

  fiber_options opts_;
  entry_fn entry_;
  void* arg_;
  fiber_stack stack_;
  void* fiber_ctx_ = nullptr;   // the fiber's saved context
  void* caller_ctx_ = nullptr;  // the loop side's saved context, while the fiber runs
  task_promise<void>* driver_ = nullptr;
  void* awaiter_ = nullptr;
  fiber_suspend_fn suspend_ = nullptr;
  std::exception_ptr error_;
  eh_globals eh_;  // the fiber's exception state while it is switched out
  // Sanitizer state: the fiber's fake stack while switched out, the loop-side stack
  // (ASan); the fiber and the loop side as TSan knows them.
  [[maybe_unused]] void* asan_fake_stack_ = nullptr;
  [[maybe_unused]] const void* caller_bottom_ = nullptr;
  [[maybe_unused]] std::size_t caller_size_ = 0;
  [[maybe_unused]] void* tsan_fiber_ = nullptr;
  [[maybe_unused]] void* tsan_caller_ = nullptr;
  bool started_ = false;
  bool finished_ = false;
  bool unwinding_ = false;
};

/// The task that runs `core` on the loop: switches into the fiber, awaits what the
/// fiber hands over, and switches back when that completes; ends when the fiber does.
task<void> drive_fiber(fiber_core& core);

}  // namespace detail
/// @endcond

}  // namespace ringio
