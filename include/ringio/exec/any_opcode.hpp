// SPDX-License-Identifier: Apache-2.0
// ringio/exec/any_opcode.hpp — ringio::any_opcode as a sender (docs/any_opcode.md).
#pragma once

#include <type_traits>
#include <utility>

#include "ringio/any_opcode.hpp"
#include "ringio/exec/io_sender.hpp"

namespace ringio::exec {

/// The request `prep` fills (see ringio::any_opcode) as a sender: set_value(int res),
/// set_error(ec) for a negative res or a refused request (operation_not_supported off
/// io_uring, function_not_supported for an opcode the kernel lacks, invalid_argument),
/// set_stopped() when stopped. The operation state holds the SQE; the buffers it points
/// to must outlive the operation.
template <class Prep>
  requires sqe_preparer<Prep>
[[nodiscard]] io_sender<ringio::detail::any_opcode_op<>> any_opcode(Prep&& prep) {
  return as_sender(ringio::any_opcode(std::forward<Prep>(prep)));
}

/// The same with a transform of the CQE (see ringio::any_opcode): set_value(T). The
/// transform must not throw (a receiver's completion is noexcept).
template <class Prep, class Transform>
  requires sqe_preparer<Prep> && cqe_transform<std::decay_t<Transform>>
[[nodiscard]] io_sender<ringio::detail::any_opcode_op<std::decay_t<Transform>>> any_opcode(Prep&& prep,
                                                                                           Transform&& transform) {
  using T = std::decay_t<Transform>;
  if constexpr (std::is_invocable_v<T&, int, unsigned>)
    static_assert(std::is_nothrow_invocable_v<T&, int, unsigned>, "the transform of a sender must be noexcept");
  else static_assert(std::is_nothrow_invocable_v<T&, int>, "the transform of a sender must be noexcept");
  return as_sender(ringio::any_opcode(std::forward<Prep>(prep), std::forward<Transform>(transform)));
}

}  // namespace ringio::exec
