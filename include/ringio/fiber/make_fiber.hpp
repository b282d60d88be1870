// SPDX-License-Identifier: Apache-2.0
// ringio/fiber/make_fiber.hpp — fiber(fn): a task that runs `fn` on a stack of its own,
// so that `fn` can wait with this_fiber::await() from any depth of ordinary calls.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "ringio/fiber/fiber_core.hpp"
#include "ringio/fiber/fiber_options.hpp"
#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/task.hpp"

namespace ringio {

/// @cond INTERNAL
namespace detail {

// What runs on the fiber's stack: the callable, then its value or exception.
template <class F, class R>
struct fiber_body {
  explicit fiber_body(F&& f) : fn(std::move(f)) {}
  F fn;
  std::conditional_t<std::is_void_v<R>, bool, std::optional<R>> value{};
  std::exception_ptr error;

  static void run(void* self) {
    auto& b = *static_cast<fiber_body*>(self);
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(b.fn);
        b.value = true;
      } else {
        b.value.emplace(std::invoke(b.fn));
      }
    } catch (const fiber_unwind&) {
      throw;
    } catch (...) {
      b.error = std::current_exception();
    }
  }
  R take() {
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<R>) return std::move(*value);
  }
};

}  // namespace detail
/// @endcond

/// A task that runs `fn()` on a fiber: a stack of its own (fiber_options::stack_size,
/// from the thread's pool) on the loop of the thread that starts the task. Inside `fn`,
/// this_fiber::await(x) waits for anything a task can co_await without suspending the
/// thread. Like any task it is lazy: the fiber (and its stack) starts when the task is
/// awaited or spawned, and it ends when `fn` returns. Awaiting the task gives `fn`'s
/// value or rethrows its exception; std::system_error when no stack can be mapped.
/// Cancellation: the fiber's stop token is the task's (inherited from the awaiting task,
/// scope or combinator); operations awaited in `fn` obey it, and `fn` can read it with
/// this_fiber::stop_token(). The task must stay on the thread that started it.
template <class F>
[[nodiscard]] task<std::invoke_result_t<std::decay_t<F>&>> fiber(F fn, fiber_options opts = {}) {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  detail::fiber_body<std::decay_t<F>, R> body(std::move(fn));
  detail::fiber_core core(opts, &decltype(body)::run, &body);
  co_await detail::drive_fiber(core);
  co_return body.take();
}

/// Starts `fn` as a fiber owned by `s` (see fiber()); `co_await s.join()` (or, from a
/// fiber, `this_fiber::await(s.join())`) waits for it and rethrows its exception. It
/// runs until its first suspension before spawn_fiber returns, and obeys the scope's
/// stop token. `fn` must return void. Throws std::system_error when no stack can be
/// mapped.
template <class F>
void spawn_fiber(scope& s, F fn, fiber_options opts = {}) {
  static_assert(std::is_void_v<std::invoke_result_t<std::decay_t<F>&>>, "spawn_fiber: fn must return void");
  s.spawn(fiber(std::move(fn), opts));
}

/// Starts `fn` as a fiber owned by `ctx` (like io_context::spawn): it runs when the loop
/// does; an exception escaping `fn` terminates the program. At the destruction of `ctx`
/// the operation it waits on is cancelled (operation_canceled) and it runs to its end.
/// `fn` must return void.
template <class F>
void spawn_fiber(io_context& ctx, F fn, fiber_options opts = {}) {
  static_assert(std::is_void_v<std::invoke_result_t<std::decay_t<F>&>>, "spawn_fiber: fn must return void");
  ctx.spawn(fiber(std::move(fn), opts));
}

}  // namespace ringio
