// SPDX-License-Identifier: Apache-2.0
// ringio/exec/pipe.hpp — `sender | then(f)`: an algorithm given everything but its
// sender returns a closure; `|` applies it.
#pragma once

#include <utility>

namespace ringio::exec {

/// An algorithm waiting for its sender: `s | c` is `c(s)`.
template <class Fn>
struct closure {
  Fn fn;  ///< Makes the final sender from the input sender.

  /// Applies the algorithm to `s`.
  template <class S>
  friend auto operator|(S&& s, closure c) {
    return std::move(c.fn)(std::forward<S>(s));
  }
};

/// @cond INTERNAL
template <class Fn>
closure(Fn) -> closure<Fn>;
/// @endcond

}  // namespace ringio::exec
