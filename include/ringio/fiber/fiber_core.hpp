// ringio/fiber/fiber_core.hpp — the machine under a fiber: its stack, the context
// switches between the stack and the loop, and the hand-over of an awaitable to the
// task that drives the fiber.
#pragma once

#include <coroutine>
#include <exception>
#include <stop_token>

#include "ringio/fiber/fiber_options.hpp"
#include "ringio/fiber/fiber_stack.hpp"
#include "ringio/task.hpp"

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

/// One fiber: a stack and the state of the switches. Lives in the frame of the task
/// that runs it (make_fiber.hpp); the loop side is that task (drive_fiber), the fiber
/// side is the code on the stack.
class fiber_core;

/// The fiber running on this thread right now (null outside fibers).
inline thread_local fiber_core* running_fiber = nullptr;

class fiber_core {
 public:
  /// Runs on the fiber's stack; must catch everything but fiber_unwind.
  using entry_fn = void (*)(void* arg);

  fiber_core(const fiber_options& opts, entry_fn entry, void* arg) noexcept
      : opts_(opts), entry_(entry), arg_(arg) {}
  /// Unwinds a fiber that started and did not finish (its destructors run), then gives
  /// its stack back to the pool.
  ~fiber_core();
  fiber_core(const fiber_core&) = delete;
  fiber_core& operator=(const fiber_core&) = delete;

  // ---- loop side ----
  /// Runs the fiber (taking a stack at the first call) until it suspends or finishes.
  void switch_in();
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
  void suspend(void* awaiter, fiber_suspend_fn fn);
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

  /// The sanitizer and exception-handling state kept across switches.
  struct switch_state {
    void* asan_fake_stack = nullptr;      // the fiber's, while it is switched out
    const void* caller_bottom = nullptr;  // the loop-side stack, for ASan
    std::size_t caller_size = 0;
    void* tsan_fiber = nullptr;
    void* tsan_caller = nullptr;
    void* eh_caught = nullptr;  // the fiber's __cxa_eh_globals, while switched out
    unsigned eh_uncaught = 0;
  };

 private:
  friend struct fiber_entry;
  void switch_out();

  fiber_options opts_;
  entry_fn entry_;
  void* arg_;
  fiber_stack stack_;
  void* fiber_ctx_ = nullptr;   // the fiber's saved context
  void* caller_ctx_ = nullptr;  // the loop side's saved context, while the fiber runs
  fiber_core* outer_ = nullptr;  // the fiber that was current when this one switched in
  task_promise<void>* driver_ = nullptr;
  void* awaiter_ = nullptr;
  fiber_suspend_fn suspend_ = nullptr;
  std::exception_ptr error_;
  switch_state sw_;
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
