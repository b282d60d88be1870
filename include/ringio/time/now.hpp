// SPDX-License-Identifier: Apache-2.0
// ringio/time/now.hpp — the clock every ringio deadline reads.
#pragma once

#include <chrono>

#include "ringio/detail/clock.hpp"

namespace ringio {

/// std::chrono::steady_clock::now(), or, on a thread with a sim::world, the world's
/// virtual time. Compute deadlines from it (`ringio::now() + 2s`) and they hold in a
/// simulation too.
inline std::chrono::steady_clock::time_point now() noexcept { return detail::steady_now(); }

}  // namespace ringio
