// SPDX-License-Identifier: Apache-2.0
// ringio_clock — a std::chrono clock that reads ringio::now(): real time on the
// kernel backends, the world's virtual time under sim. Tests that measure how long
// ringio waited use it, so they hold on every backend.
#pragma once

#include <chrono>

#include "ringio/time/now.hpp"

namespace ringio_test {

struct ringio_clock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::steady_clock::time_point;
  static constexpr bool is_steady = true;
  static time_point now() noexcept { return ringio::now(); }
};

}  // namespace ringio_test
