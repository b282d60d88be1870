// ringio/detail/resume_loop.hpp — the per-thread resumption loop. Where a coroutine
// hands control to another (a task starting the child it awaits, a finished task
// resuming its awaiter), it returns to the loop that resumed it and the loop resumes
// the next one. The stack stays flat without relying on the compiler to turn
// symmetric transfer into a tail call, which GCC does not do below -O2.
#pragma once

#include <coroutine>
#include <utility>

namespace ringio::detail {

struct resume_loop_state {
  /// The coroutine the innermost loop on this thread resumed and is waiting for
  /// (null: no loop is running).
  void* running = nullptr;
  /// What that coroutine handed on, for the loop to resume next.
  std::coroutine_handle<> next;
};

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

/// What an await_suspend of `self` returns to run `target` next. When a resumption
/// loop resumed `self` directly, `target` goes to that loop and `self` returns to it;
/// otherwise (no loop below, or `self` was resumed by other code) it is a symmetric
/// transfer. `self` may already be destroyed: only its address is compared.
inline std::coroutine_handle<> hand_over(void* self, std::coroutine_handle<> target) noexcept {
  resume_loop_state& s = resume_loop;
  if (s.running != self || target == std::noop_coroutine()) return target;
  s.next = target;
  return std::noop_coroutine();
}

}  // namespace ringio::detail
