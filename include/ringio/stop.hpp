// SPDX-License-Identifier: Apache-2.0
// ringio/stop.hpp — the implicit stop token of a task. Every task carries the token of
// whoever awaits it (a scope's, when_any's, or none); operations awaited without an
// explicit token obey it. `co_await current_stop_token()` reads it.
#pragma once

#include <coroutine>
#include <stop_token>
#include <type_traits>

#include "ringio/detail/promise_base.hpp"

namespace ringio {
namespace detail {

struct stop_token_awaiter {
  std::stop_token token;
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    if constexpr (std::is_base_of_v<promise_base, P>) {
      if (const std::stop_token* t = h.promise().stop_token()) token = *t;
    }
    return false;  // never suspends
  }
  std::stop_token await_resume() noexcept { return std::move(token); }
};

}  // namespace detail

/// The stop token the awaiting task's operations obey by default (empty if none).
[[nodiscard]] inline detail::stop_token_awaiter current_stop_token() noexcept { return {}; }

}  // namespace ringio
