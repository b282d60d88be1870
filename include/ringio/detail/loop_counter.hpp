// SPDX-License-Identifier: Apache-2.0
// ringio/detail/loop_counter.hpp — a metrics counter that one thread writes and any
// thread reads: a relaxed load and store (plain moves, no locked instruction).
#pragma once

#include <atomic>
#include <cstdint>

namespace ringio::detail {

/// A counter written by one thread only (its loop) and read by any thread.
class loop_counter {
 public:
  /// Adds `n` (owning thread only).
  void add(std::uint64_t n) noexcept { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  /// Subtracts `n` (owning thread only).
  void sub(std::uint64_t n) noexcept { v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed); }
  /// Adds one (owning thread only).
  void operator++() noexcept { add(1); }
  /// Subtracts one (owning thread only).
  void operator--() noexcept { sub(1); }
  /// The value now (any thread).
  [[nodiscard]] std::uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

}  // namespace ringio::detail
