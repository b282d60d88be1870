// SPDX-License-Identifier: Apache-2.0
// ringio/fiber/fiber_options.hpp — how a fiber's stack is set up.
#pragma once

#include <cstddef>

namespace ringio {

/// Options of one fiber. Every field has a default.
struct fiber_options {
  /// Usable bytes of the fiber's stack, rounded up to whole pages (at least two).
  /// A guard page (PROT_NONE) lies below it: overflowing the stack raises SIGSEGV.
  /// Stacks of one size are reused from a per-thread pool (fiber_stack_pool.hpp).
  std::size_t stack_size = 64 * 1024;
};

}  // namespace ringio
