// SPDX-License-Identifier: Apache-2.0
// ringio/exec/just.hpp — just(v...): a sender that completes at once with the values.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "ringio/exec/tags.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {
template <class Receiver, class... Vs>
struct just_state {
  using operation_state_concept = operation_state_t;
  std::tuple<Vs...> values;
  Receiver rcvr;
  void start() & noexcept {
    std::apply([this](Vs&... v) { std::move(rcvr).set_value(std::move(v)...); }, values);
  }
};
}  // namespace detail
/// @endcond

/// The sender of just().
template <class... Vs>
class just_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// How it completes: with the values, always.
  using completion_signatures = exec::completion_signatures<set_value_t(Vs...)>;

  /// Holds the values.
  explicit just_sender(Vs... vs) : values_(std::move(vs)...) {}

  /// The operation state: start() completes the receiver inline.
  template <class Receiver>
  detail::just_state<std::decay_t<Receiver>, Vs...> connect(Receiver&& r) && {
    return {std::move(values_), std::forward<Receiver>(r)};
  }
  /// The same, copying the values.
  template <class Receiver>
  detail::just_state<std::decay_t<Receiver>, Vs...> connect(Receiver&& r) const& {
    return {values_, std::forward<Receiver>(r)};
  }

 private:
  std::tuple<Vs...> values_;
};

/// A sender completing inline with set_value(vs...). Never fails, never stops.
template <class... Vs>
[[nodiscard]] just_sender<std::decay_t<Vs>...> just(Vs&&... vs) {
  return just_sender<std::decay_t<Vs>...>(std::forward<Vs>(vs)...);
}

}  // namespace ringio::exec
