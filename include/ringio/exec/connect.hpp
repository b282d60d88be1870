// SPDX-License-Identifier: Apache-2.0
// ringio/exec/connect.hpp — connect and start, spelled once for ringio's own senders
// and (with RINGIO_EXEC_STDEXEC) for any stdexec sender.
#pragma once

#include <utility>

#include "ringio/exec/tags.hpp"

namespace ringio::exec {

/// Connects sender `s` to receiver `r`: the operation state (not started, not movable).
template <class S, class R>
decltype(auto) connect(S&& s, R&& r) {
#if defined(RINGIO_EXEC_STDEXEC)
  return stdexec::connect(std::forward<S>(s), std::forward<R>(r));
#else
  return std::forward<S>(s).connect(std::forward<R>(r));
#endif
}

/// The operation state type of connect(S, R).
template <class S, class R>
using connect_result_t = decltype(exec::connect(std::declval<S>(), std::declval<R>()));

/// Starts operation state `op`.
template <class Op>
void start(Op& op) noexcept {
  op.start();
}

}  // namespace ringio::exec
