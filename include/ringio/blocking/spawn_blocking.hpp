// SPDX-License-Identifier: Apache-2.0
// ringio/blocking/spawn_blocking.hpp — run a blocking function on a thread pool and
// await its result on the loop: `co_await ringio::spawn_blocking(fn)`.
#pragma once

#include <concepts>
#include <type_traits>
#include <utility>

#include "ringio/blocking/blocking_pool.hpp"
#include "ringio/detail/spawn_blocking_op.hpp"

namespace ringio {

/// Runs `fn()` on a thread of the current loop's default pool (blocking_pool::
/// default_of) and resumes the awaiting task on its own loop with a result<R>, R
/// being what `fn` returns (void: result<void>). For work that blocks or computes for
/// long: a getaddrinfo(3), a library without an asynchronous interface, a hash.
///
/// - An exception thrown by `fn` is rethrown by the co_await.
/// - A full queue (blocking_pool_options::queue_limit): errc::queue_full at once, and
///   `fn` never runs.
/// - A stop (the awaiting task's token, with_timeout) before `fn` started: it never
///   runs, and the await gives operation_canceled (timed_out for a deadline). A stop
///   once it started: the await gives operation_canceled at once, `fn` runs to its
///   end on the pool thread, and its value is destroyed unread (on the loop, or on the
///   pool thread when the loop is gone). So `fn` must own what it uses: capture by
///   value, never references into the awaiting frame, when the task may be stopped.
/// - The loop shut down or destroyed: as a stop. Its default pool waits, in the
///   context's destructor, for functions already running.
/// - On the sim backend `fn` runs on the loop's thread, from its inbox on a later loop
///   iteration (deterministic; it must not wait for the simulated world).
///
/// The loop takes no lock for the completion (an inbox push, as post() does); the
/// submission takes the pool's mutex briefly. One allocation per call (the job).
template <class F>
  requires std::invocable<std::decay_t<F>&>
[[nodiscard]] auto spawn_blocking(blocking_pool& pool, F&& fn) {
  using fn_type = std::decay_t<F>;
  using R = std::invoke_result_t<fn_type&>;
  static_assert(!std::is_reference_v<R>, "spawn_blocking: the function must return a value, not a reference");
  auto* job = new detail::blocking_fn_job<fn_type, R>(fn_type(std::forward<F>(fn)));
  return detail::spawn_blocking_op<R>(&pool, job);
}

/// The same on the awaiting loop's default pool.
template <class F>
  requires std::invocable<std::decay_t<F>&>
[[nodiscard]] auto spawn_blocking(F&& fn) {
  using fn_type = std::decay_t<F>;
  using R = std::invoke_result_t<fn_type&>;
  static_assert(!std::is_reference_v<R>, "spawn_blocking: the function must return a value, not a reference");
  auto* job = new detail::blocking_fn_job<fn_type, R>(fn_type(std::forward<F>(fn)));
  return detail::spawn_blocking_op<R>(nullptr, job);
}

}  // namespace ringio
