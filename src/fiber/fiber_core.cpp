// Switching between a fiber's stack and the loop with Boost.Context's fcontext
// primitives, told to the sanitizers, with the C++ exception state of each side kept
// apart (a fiber may be suspended inside a catch block).
#include "ringio/fiber/fiber_core.hpp"

#include <cxxabi.h>

#include <boost/context/detail/fcontext.hpp>
#include <cstdlib>
#include <exception>
#include <utility>

#include "ringio/log.hpp"

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

namespace bctx = boost::context::detail;

namespace ringio::detail {
namespace {

// The layout of __cxa_eh_globals in the Itanium C++ ABI (libstdc++ and libc++abi).
struct eh_globals {
  void* caught;
  unsigned int uncaught;
};

thread_local eh_globals* thread_eh = nullptr;

eh_globals& thread_eh_globals() noexcept {
  if (thread_eh == nullptr) thread_eh = reinterpret_cast<eh_globals*>(abi::__cxa_get_globals());
  return *thread_eh;
}

}  // namespace

// The fiber side of the first switch and of the last one.
struct fiber_entry {
  [[noreturn]] static void run(bctx::transfer_t t) noexcept {
    auto* f = static_cast<fiber_core*>(t.data);
    f->caller_ctx_ = t.fctx;
#ifdef RINGIO_FIBER_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &f->sw_.caller_bottom, &f->sw_.caller_size);
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
    __sanitizer_start_switch_fiber(nullptr, f->sw_.caller_bottom, f->sw_.caller_size);  // this stack dies
#endif
#ifdef RINGIO_FIBER_TSAN
    __tsan_switch_to_fiber(f->sw_.tsan_caller, 0);
#endif
    bctx::jump_fcontext(f->caller_ctx_, nullptr);
    std::abort();  // never resumed
  }
};

void fiber_core::switch_in() {
  if (!started_) {
    stack_ = fiber_stack::acquire(opts_.stack_size);
    fiber_ctx_ = bctx::make_fcontext(stack_.top(), stack_.size(), &fiber_entry::run);
    started_ = true;
#ifdef RINGIO_FIBER_TSAN
    sw_.tsan_fiber = __tsan_create_fiber(0);
#endif
  }
  outer_ = running_fiber;
  running_fiber = this;
  eh_globals& eh = thread_eh_globals();
  const eh_globals outside = eh;
  eh = eh_globals{sw_.eh_caught, sw_.eh_uncaught};
#ifdef RINGIO_FIBER_TSAN
  sw_.tsan_caller = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(sw_.tsan_fiber, 0);
#endif
#ifdef RINGIO_FIBER_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, stack_.bottom(), stack_.size());
#endif
  bctx::transfer_t t = bctx::jump_fcontext(fiber_ctx_, this);
#ifdef RINGIO_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  fiber_ctx_ = t.fctx;
  sw_.eh_caught = eh.caught;
  sw_.eh_uncaught = eh.uncaught;
  eh = outside;
  running_fiber = outer_;
  if (finished_) {
    stack_ = fiber_stack{};  // back to the pool
#ifdef RINGIO_FIBER_TSAN
    __tsan_destroy_fiber(sw_.tsan_fiber);
    sw_.tsan_fiber = nullptr;
#endif
  }
}

void fiber_core::switch_out() {
#ifdef RINGIO_FIBER_ASAN
  __sanitizer_start_switch_fiber(&sw_.asan_fake_stack, sw_.caller_bottom, sw_.caller_size);
#endif
#ifdef RINGIO_FIBER_TSAN
  __tsan_switch_to_fiber(sw_.tsan_caller, 0);
#endif
  bctx::transfer_t t = bctx::jump_fcontext(caller_ctx_, nullptr);
  caller_ctx_ = t.fctx;
#ifdef RINGIO_FIBER_ASAN
  __sanitizer_finish_switch_fiber(sw_.asan_fake_stack, &sw_.caller_bottom, &sw_.caller_size);
#endif
}

void fiber_core::suspend(void* awaiter, fiber_suspend_fn fn) {
  awaiter_ = awaiter;
  suspend_ = fn;
  switch_out();
  awaiter_ = nullptr;
  if (unwinding_) throw fiber_unwind{};
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
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
  std::coroutine_handle<> await_suspend(fiber_driver_handle h) const noexcept { return core.suspend_awaiter(h); }
  void await_resume() const noexcept {}
};

}  // namespace

task<void> drive_fiber(fiber_core& core) {
  co_await bind_driver_awaiter{core};
  for (;;) {
    core.switch_in();
    if (core.finished()) co_return;
    co_await suspension_awaiter{core};
  }
}

}  // namespace ringio::detail
