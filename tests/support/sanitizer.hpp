// SPDX-License-Identifier: Apache-2.0
// sanitizer — whether this test binary runs under a sanitizer. Tests that exhaust the
// descriptor table skip there: the sanitizer runtime needs descriptors of its own
// (it reads /proc files when it inspects a thread or a type) and aborts without them.
// The simulation's many-world tests run a quarter of their worlds there: the release
// suite runs them all, the sanitizer builds look for memory errors on the same paths.
#pragma once

#include <cstddef>

namespace ringio_test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool under_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(undefined_behavior_sanitizer)
inline constexpr bool under_sanitizer = true;
#else
inline constexpr bool under_sanitizer = false;
#endif
#else
inline constexpr bool under_sanitizer = false;
#endif

/// How many seeded simulated worlds a test runs: `n` in release, a quarter under a
/// sanitizer (at least 1).
constexpr std::size_t sim_worlds(std::size_t n) { return under_sanitizer ? (n / 4 > 0 ? n / 4 : 1) : n; }

}  // namespace ringio_test
