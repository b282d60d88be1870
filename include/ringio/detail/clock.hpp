// SPDX-License-Identifier: Apache-2.0
// ringio/detail/clock.hpp — CLOCK_MONOTONIC in nanoseconds: the clock of every deadline
// (std::chrono::steady_clock reads the same clock on Linux), or the virtual clock of the
// thread's sim::world when there is one.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace ringio::detail {

/// The virtual clock of the calling thread's sim::world, or null.
extern thread_local const std::int64_t* virtual_clock_ns;

inline std::int64_t monotonic_ns() noexcept {
  if (const std::int64_t* v = virtual_clock_ns) [[unlikely]]
    return *v;
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// now + d, saturating; never 0 (0 means "no deadline").
inline std::int64_t deadline_after(std::chrono::nanoseconds d) noexcept {
  std::int64_t now = monotonic_ns();
  std::int64_t n = d.count() < 0 ? 0 : d.count();
  std::int64_t t = n > INT64_MAX - now ? INT64_MAX : now + n;
  return t == 0 ? 1 : t;
}

inline std::int64_t to_monotonic_ns(std::chrono::steady_clock::time_point t) noexcept {
  std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return ns <= 0 ? 1 : ns;
}

/// monotonic_ns() as a steady_clock time point.
inline std::chrono::steady_clock::time_point steady_now() noexcept {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(monotonic_ns()));
}

}  // namespace ringio::detail
