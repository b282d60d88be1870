// SPDX-License-Identifier: Apache-2.0
// The thread's current io_context, swapped wholesale by code that runs several loops
// on one thread's stacks in turn (the hosts of a simulated world).
#pragma once

namespace ringio {
class io_context;
}

namespace ringio::detail {

/// Makes `ctx` the calling thread's current io_context; returns the previous one.
io_context* exchange_current_context(io_context* ctx) noexcept;

}  // namespace ringio::detail
