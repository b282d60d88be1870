// SPDX-License-Identifier: Apache-2.0
// The cold parts of a fiber: its first and last switch, its unwinding, and the task
// that drives it (the switches themselves are inline in fiber_core.hpp).
#include "ringio/fiber/fiber_core.hpp"

#include <cstdlib>
#include <exception>

#include "ringio/io_context.hpp"
#include "ringio/log.hpp"

namespace bctx = boost::context::detail;

namespace ringio::detail {

void attach_fiber_hooks() noexcept;  // hook_bridge.cpp

// The fiber side of the first switch and of the last one.
struct fiber_entry {
  [[noreturn]] static void run(bctx::transfer_t t) noexcept {
    auto* f = static_cast<fiber_core*>(t.data);
    f->caller_ctx_ = t.fctx;
#ifdef RINGIO_FIBER_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &f->caller_bottom_, &f->caller_size_);
#endif
    try {
      f->entry_(f->arg_);
    } catch (const fiber_unwind&) {  // the owner is being destroyed: the stack is unwound
    } catch (...) {
      log(log_level::error, "an exception escaped a fiber's entry");
      std::terminate();
    }
    f->finished_ = true;
#ifdef RINGIO_FIBER_ASAN
    __sanitizer_start_switch_fiber(nullptr, f->caller_bottom_, f->caller_size_);  // this stack dies
#endif
#ifdef RINGIO_FIBER_TSAN
    __tsan_switch_to_fiber(f->tsan_caller_, 0);
#endif
    bctx::jump_fcontext(f->caller_ctx_, nullptr);
    std::abort();  // never resumed
  }
};

void fiber_core::start() {
  static const bool hooks_looked_up = (attach_fiber_hooks(), true);
  (void)hooks_looked_up;
  stack_ = fiber_stack::acquire(opts_.stack_size);
  fiber_ctx_ = bctx::make_fcontext(stack_.top(), stack_.size(), &fiber_entry::run);
  started_ = true;
#ifdef RINGIO_FIBER_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

void fiber_core::release() noexcept {
  stack_ = fiber_stack{};  // back to the pool
#ifdef RINGIO_FIBER_TSAN
  __tsan_destroy_fiber(tsan_fiber_);
  tsan_fiber_ = nullptr;
#endif
}

fiber_core::~fiber_core() {
  if (!started_ || finished_) return;
  // Destroyed while suspended: unwind the fiber's stack so that its objects are
  // destroyed, then the stack goes back to the pool.
  unwinding_ = true;
  switch_in();
  if (!finished_) {
    log(log_level::error, "a fiber kept running while it was unwound");
    std::terminate();
  }
}

namespace {

struct bind_driver_awaiter {
  fiber_core& core;
  bool await_ready() const noexcept { return false; }
  bool await_suspend(fiber_driver_handle h) const noexcept {
    core.bind_driver(h.promise());
    return false;
  }
  void await_resume() const noexcept {}
};

struct suspension_awaiter {
  fiber_core& core;
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(fiber_driver_handle h) const noexcept {
    return hand_over(h.address(), core.suspend_awaiter(h));
  }
  void await_resume() const noexcept {}
};

}  // namespace

// Counts a fiber in its loop's metrics (fibers_alive) while its driver lives.
class alive_fiber {
 public:
  alive_fiber() noexcept : loop_(io_context::current()) {
    if (loop_ != nullptr) loop_->fiber_began();
  }
  ~alive_fiber() {
    if (loop_ != nullptr) loop_->fiber_ended();
  }
  alive_fiber(const alive_fiber&) = delete;
  alive_fiber& operator=(const alive_fiber&) = delete;

 private:
  io_context* loop_;
};

task<void> drive_fiber(fiber_core& core) {
  const alive_fiber counted;
  co_await bind_driver_awaiter{core};
  for (;;) {
    core.switch_in();
    if (core.finished()) co_return;
    co_await suspension_awaiter{core};
  }
}

}  // namespace ringio::detail
