// SPDX-License-Identifier: Apache-2.0
// seed — the seed of a randomized test: RINGIO_TEST_SEED when set (to replay a
// failure), else a fresh one. It is printed so that every run can be replayed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace ringio_test {

inline std::uint64_t test_seed() {
  std::uint64_t seed = 0;
  if (const char* s = std::getenv("RINGIO_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  else seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  std::printf("seed %llu (replay: RINGIO_TEST_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace ringio_test
