// SPDX-License-Identifier: Apache-2.0
#include "sim/host_fiber.hpp"

#include <cxxabi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>

#include "ringio/log.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define RINGIO_HOST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RINGIO_HOST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RINGIO_HOST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGIO_HOST_TSAN 1
#endif
#endif
#ifdef RINGIO_HOST_ASAN
#include <sanitizer/asan_interface.h>
#endif
#ifdef RINGIO_HOST_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ringio::detail {
namespace {

// The Itanium ABI's per-thread exception state: exceptions being handled, and the
// count of those thrown and not yet caught. Each stack keeps its own.
struct eh_state {
  void* caught;
  unsigned int uncaught;
};

eh_state& thread_eh() noexcept { return *reinterpret_cast<eh_state*>(abi::__cxa_get_globals()); }

}  // namespace

host_fiber::host_fiber(std::function<void()> body, std::size_t stack_bytes) : body_(std::move(body)) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  stack_bytes_ = (stack_bytes + page - 1) / page * page;
  map_bytes_ = stack_bytes_ + page;
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map_ == MAP_FAILED) throw std::system_error(errno, std::system_category(), "mmap (simulated host's stack)");
  ::mprotect(map_, page, PROT_NONE);  // the guard page below the stack
  stack_ = static_cast<char*>(map_) + page;
  if (::getcontext(&fiber_ctx_) != 0) throw std::system_error(errno, std::system_category(), "getcontext");
  fiber_ctx_.uc_stack.ss_sp = stack_;
  fiber_ctx_.uc_stack.ss_size = stack_bytes_;
  fiber_ctx_.uc_link = nullptr;
  const auto self = reinterpret_cast<std::uintptr_t>(this);
  ::makecontext(&fiber_ctx_, reinterpret_cast<void (*)()>(&host_fiber::entry), 2, static_cast<unsigned>(self >> 32),
                static_cast<unsigned>(self & 0xffffffffu));
#ifdef RINGIO_HOST_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

host_fiber::~host_fiber() {
  if (started_ && !finished_) {
    log(log_level::error, "a simulated host's stack was freed while its program was still on it");
    std::terminate();
  }
#ifdef RINGIO_HOST_TSAN
  __tsan_destroy_fiber(tsan_fiber_);
#endif
  ::munmap(map_, map_bytes_);
}

void host_fiber::entry(unsigned hi, unsigned lo) {
  auto* f = reinterpret_cast<host_fiber*>((static_cast<std::uintptr_t>(hi) << 32) | lo);
#ifdef RINGIO_HOST_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &f->caller_bottom_, &f->caller_size_);
#endif
  try {
    f->body_();
  } catch (...) {
    log(log_level::error, "an exception escaped a simulated host's program");
    std::terminate();
  }
  f->finished_ = true;
  f->switch_stacks(direction::last_out);
  std::abort();  // never resumed
}

// Swaps stacks (in: to the fiber; out: back to the scheduler; last_out: the fiber's
// stack is done). The C++ exception state follows the stack, the sanitizers are told.
void host_fiber::switch_stacks(direction d) {
  eh_state& eh = thread_eh();
  const eh_state here = eh;
  eh = eh_state{eh_caught_, eh_uncaught_};
  eh_caught_ = here.caught;
  eh_uncaught_ = here.uncaught;
  ucontext_t& from = d == direction::in ? caller_ctx_ : fiber_ctx_;
  ucontext_t& to = d == direction::in ? fiber_ctx_ : caller_ctx_;
#ifdef RINGIO_HOST_TSAN
  if (d == direction::in) {
    tsan_caller_ = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(tsan_fiber_, 0);
  } else {
    __tsan_switch_to_fiber(tsan_caller_, 0);
  }
#endif
#ifdef RINGIO_HOST_ASAN
  void* fake_stack = nullptr;
  if (d == direction::in) __sanitizer_start_switch_fiber(&fake_stack, stack_, stack_bytes_);
  else __sanitizer_start_switch_fiber(d == direction::last_out ? nullptr : &fake_stack, caller_bottom_, caller_size_);
  ::swapcontext(&from, &to);
  if (d == direction::in) __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
  else __sanitizer_finish_switch_fiber(fake_stack, &caller_bottom_, &caller_size_);
#else
  ::swapcontext(&from, &to);
#endif
}

void host_fiber::resume() {
  if (finished_) return;
  started_ = true;
  switch_stacks(direction::in);
}

void host_fiber::suspend() { switch_stacks(direction::out); }

}  // namespace ringio::detail
