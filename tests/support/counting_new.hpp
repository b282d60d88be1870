// SPDX-License-Identifier: Apache-2.0
// counting_new — replaces the global operator new with one that counts allocations
// while `counting` is set, for the zero-allocation tests. It defines the replacement
// functions (and a test that they are in effect): include it in exactly one source
// file of a test program.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace ringio_test {
inline std::atomic<long> allocations{0};
inline std::atomic<bool> counting{false};
}  // namespace ringio_test

// The replacements pair malloc with free; GCC cannot see that and warns.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  if (ringio_test::counting.load(std::memory_order_relaxed))
    ringio_test::allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

// Every program that counts checks first that the replacement is the one in use.
TEST(AllocationCounter, SeesAllocationsWhileCounting) {
  ringio_test::allocations = 0;
  ringio_test::counting = true;
  auto* p = new int(1);
  ringio_test::counting = false;
  delete p;
  EXPECT_EQ(ringio_test::allocations.load(), 1) << "the replaced operator new is not in effect";
}
