// SPDX-License-Identifier: Apache-2.0
// rate_limited_log — at most one log line per period for a recurring event on one
// loop thread; the lines say how many occurrences went unreported in between.
#pragma once

#include <chrono>
#include <cstdint>

#include "ringio/detail/clock.hpp"
#include "ringio/log.hpp"

namespace ringio::detail {

class rate_limited_log {
 public:
  explicit rate_limited_log(std::chrono::steady_clock::duration period) noexcept : period_(period) {}

  /// Counts one occurrence; true when a line is due now (then call suppressed() for
  /// the count to report).
  bool due() noexcept {
    auto now = detail::steady_now();
    if (logged_once_ && now - last_ < period_) {
      ++suppressed_;
      return false;
    }
    logged_once_ = true;
    last_ = now;
    return true;
  }
  /// Occurrences not reported since the previous line (resets the count).
  std::uint64_t take_suppressed() noexcept {
    auto n = suppressed_;
    suppressed_ = 0;
    return n;
  }
  /// Forgets the last line: the next occurrence is reported at once.
  void reset() noexcept {
    logged_once_ = false;
    suppressed_ = 0;
  }
  void set_period(std::chrono::steady_clock::duration period) noexcept { period_ = period; }

 private:
  std::chrono::steady_clock::duration period_;
  std::chrono::steady_clock::time_point last_{};
  bool logged_once_ = false;
  std::uint64_t suppressed_ = 0;
};

}  // namespace ringio::detail
