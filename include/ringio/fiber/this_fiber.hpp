// SPDX-License-Identifier: Apache-2.0
// ringio/fiber/this_fiber.hpp — blocking-style calls for code running in a fiber:
// await any awaitable, sleep, yield, read the stop token.
#pragma once

#include <chrono>
#include <coroutine>
#include <stdexcept>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "ringio/fiber/fiber_core.hpp"
#include "ringio/result.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/yield.hpp"

namespace ringio {

/// @cond INTERNAL
namespace detail {

template <class A>
concept has_free_co_await = requires(A&& a) { operator co_await(std::forward<A>(a)); };

template <class A>
decltype(auto) fiber_get_awaiter(A&& a) {
  if constexpr (has_member_co_await<A>) return std::forward<A>(a).operator co_await();
  else if constexpr (has_free_co_await<A>) return operator co_await(std::forward<A>(a));
  else return static_cast<A&&>(a);
}

template <class Aw>
std::coroutine_handle<> fiber_suspend(void* p, fiber_driver_handle driver, std::exception_ptr& error) noexcept {
  Aw& a = *static_cast<Aw*>(p);
  try {
    using R = decltype(a.await_suspend(driver));
    if constexpr (std::is_void_v<R>) {
      a.await_suspend(driver);
      return std::noop_coroutine();
    } else if constexpr (std::is_same_v<R, bool>) {
      if (a.await_suspend(driver)) return std::noop_coroutine();
      return driver;
    } else {
      return a.await_suspend(driver);
    }
  } catch (...) {
    error = std::current_exception();
    return driver;
  }
}

inline fiber_core& current_fiber_or_throw() {
  fiber_core* f = fiber_core::current();
  if (f == nullptr) throw std::logic_error("ringio::this_fiber: called outside a fiber");
  f->check_unwinding();
  return *f;
}

}  // namespace detail
/// @endcond

/// Calls for the fiber running on the calling thread. Each throws std::logic_error
/// when called outside a fiber.
namespace this_fiber {

/// Whether the calling code runs in a fiber. No errors.
[[nodiscard]] inline bool in_fiber() noexcept { return detail::fiber_core::current() != nullptr; }

/// Waits for `a` — anything a task can `co_await`: a ringio operation (`s.recv(buf)`,
/// `l.accept()`, `sleep_for(d)`), a `task<T>`, `when_all`/`when_any`, a scope's
/// `join()` — and returns what `co_await a` would give, or throws what it would throw.
/// Suspends the fiber, not the thread: the loop runs other tasks and fibers meanwhile.
/// Cancellation: `a` obeys the fiber's stop token exactly as it obeys a task's (a
/// stop cancels it with operation_canceled; a cancel that loses the race delivers the
/// real result; a stop before it starts sends nothing). Throws std::logic_error outside
/// a fiber, and whatever `a`'s await_suspend throws.
template <class A>
decltype(auto) await(A&& a) {
  detail::fiber_core& f = detail::current_fiber_or_throw();
  decltype(auto) aw = detail::fiber_get_awaiter(std::forward<A>(a));
  using Aw = std::remove_reference_t<decltype(aw)>;
  if (!aw.await_ready())
    f.suspend(const_cast<void*>(static_cast<const volatile void*>(&aw)), &detail::fiber_suspend<Aw>);
  using R = decltype(aw.await_resume());
  // An rvalue reference may point into the awaiter, which dies here: return a value.
  if constexpr (std::is_rvalue_reference_v<R>) return std::remove_cvref_t<R>(aw.await_resume());
  else return aw.await_resume();
}

/// The stop token of the fiber: that of the scope, when_any or task that runs it (an
/// empty token when nothing can stop it). Throws std::logic_error outside a fiber.
[[nodiscard]] inline std::stop_token stop_token() {
  const std::stop_token* t = detail::current_fiber_or_throw().stop_token();
  return t != nullptr ? *t : std::stop_token{};
}

/// Whether the fiber was asked to stop. Throws std::logic_error outside a fiber.
[[nodiscard]] inline bool stop_requested() {
  const std::stop_token* t = detail::current_fiber_or_throw().stop_token();
  return t != nullptr && t->stop_requested();
}

/// Suspends the fiber for `d`. operation_canceled when the fiber is stopped first.
inline result<void> sleep_for(std::chrono::nanoseconds d) { return await(ringio::sleep_for(d)); }

/// Suspends the fiber until `t`. operation_canceled when the fiber is stopped first.
inline result<void> sleep_until(std::chrono::steady_clock::time_point t) { return await(ringio::sleep_until(t)); }

/// Lets the other tasks and fibers of the loop run; resumes on a later iteration.
/// Not cancellable (it always comes back at once).
inline void yield() { await(ringio::yield()); }

}  // namespace this_fiber
}  // namespace ringio
