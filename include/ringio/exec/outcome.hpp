// SPDX-License-Identifier: Apache-2.0
// ringio/exec/outcome.hpp — how a sender completed, kept to be delivered later (on
// another thread, after the other children of when_any, ...).
#pragma once

#include <exception>
#include <optional>
#include <tuple>
#include <utility>
#include <variant>

#include "ringio/exec/sender_traits.hpp"

namespace ringio::exec::detail {

/// A value tuple, one of the error types, or "stopped" (the default).
template <class ValueTuple, class Errors>
struct outcome {
  std::optional<ValueTuple> value;
  typename error_variant<Errors>::type error;

  template <class... A>
  void set_value(A&&... a) noexcept {
    value.emplace(std::forward<A>(a)...);
  }
  template <class E>
  void set_error(E&& e) noexcept {
    error.template emplace<std::decay_t<E>>(std::forward<E>(e));
  }
  [[nodiscard]] bool has_error() const noexcept { return error.index() != 0; }

  /// Completes `r` with what was kept.
  template <class R>
  void deliver(R& r) noexcept {
    if (value) {
      std::apply([&](auto&... v) { std::move(r).set_value(std::move(v)...); }, *value);
    } else if (has_error()) {
      deliver_error(r);
    } else {
      std::move(r).set_stopped();
    }
  }
  /// Completes `r` with the error kept (has_error() must be true).
  template <class R>
  void deliver_error(R& r) noexcept {
    std::visit(
        [&](auto& e) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(e)>, std::monostate>)
            std::move(r).set_error(std::move(e));
        },
        error);
  }
};

}  // namespace ringio::exec::detail
