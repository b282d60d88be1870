// SPDX-License-Identifier: Apache-2.0
// ringio/exec/stop_link.hpp — an algorithm's own stop source, requested when the
// parent's stop token is (when_all, when_any stop their children through it). Allocates nothing..
#pragma once

#include <optional>

#include "ringio/exec/inplace_stop_token.hpp"
#include "ringio/exec/tags.hpp"

namespace ringio::exec::detail {

/// Forwards a stop of a parent token of type `Token` to `source`.
template <class Token>
class stop_link {
 public:
  /// Starts forwarding (requests at once if `parent` is already stopped).
  void link(const Token& parent) {
    if (parent.stop_possible()) cb_.emplace(parent, forward{&source});
  }
  /// Stops forwarding; waits for a forward running on another thread.
  void unlink() noexcept { cb_.reset(); }

  inplace_stop_source source;  ///< Requested by the parent or by the algorithm itself.

 private:
  struct forward {
    inplace_stop_source* target;
    void operator()() const noexcept { target->request_stop(); }
  };
  std::optional<stop_callback_for_t<Token, forward>> cb_;
};

}  // namespace ringio::exec::detail
