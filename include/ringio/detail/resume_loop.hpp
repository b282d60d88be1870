// SPDX-License-Identifier: Apache-2.0
// ringio/detail/resume_loop.hpp — the per-thread resumption loop. Where a coroutine
// hands control to another (a task starting the child it awaits, a finished task
// resuming its awaiter, a fiber's driver going on), it may do so by symmetric transfer
// a few times in a row; then it returns to the loop that resumed the first of them and
// the loop resumes the next one. Symmetric transfer is a tail call when the compiler
// makes it one (clang always, GCC at -O2) and a nested call otherwise (GCC at -O0):
// either way the stack holds at most max_hops of them, and an optimised build pays a
// counter per hand-over and a trip through the loop every max_hops.
#pragma once

#include <coroutine>
#include <utility>

namespace ringio::detail {

struct resume_loop_state {
  /// The coroutine whose return goes straight back to the innermost loop on this
  /// thread: the one it resumed, or the last one handed control by symmetric transfer
  /// since (null: no loop is running).
  void* running = nullptr;
  /// What that coroutine handed on, for the loop to resume next.
  std::coroutine_handle<> next;
  /// Symmetric transfers since the stack last went back to the loop.
  unsigned hops = 0;
};

/// Symmetric transfers in a row before the stack goes back to the loop: the depth of
/// nested resumes where they are not tail calls.
inline constexpr unsigned max_hops = 16;

inline thread_local resume_loop_state resume_loop;

/// Resumes `h`, then whatever each coroutine hands on, until one suspends without
/// handing on. Nested calls (a coroutine resuming another inline) keep their own state.
inline void resume_flat(std::coroutine_handle<> h) {
  resume_loop_state& s = resume_loop;
  struct restore {
    resume_loop_state& s;
    resume_loop_state outer;
    ~restore() { s = outer; }
  } guard{s, std::exchange(s, resume_loop_state{})};
  do {
    s.running = h.address();
    h.resume();
    h = std::exchange(s.next, {});
  } while (h);
}

/// What an await_suspend of `self` returns to run `target` next. When `self` returns
/// straight to a resumption loop, `target` runs by symmetric transfer up to max_hops
/// times in a row, and then goes to the loop while `self` returns to it. Otherwise (no
/// loop below, or `self` was resumed by other code) it is a symmetric transfer. `self`
/// may already be destroyed: only its address is compared.
inline std::coroutine_handle<> hand_over(void* self, std::coroutine_handle<> target) noexcept {
  resume_loop_state& s = resume_loop;
  if (s.running != self || target == std::noop_coroutine()) return target;
  if (++s.hops < max_hops) {
    s.running = target.address();
    return target;
  }
  s.hops = 0;
  s.next = target;
  return std::noop_coroutine();
}

}  // namespace ringio::detail
