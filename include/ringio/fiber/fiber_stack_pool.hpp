// SPDX-License-Identifier: Apache-2.0
// ringio/fiber/fiber_stack_pool.hpp — the per-thread pool of fiber stacks: counters
// and trimming.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringio {

/// Counters of the calling thread's fiber stack pool.
struct fiber_stack_pool_statistics {
  std::uint64_t mapped = 0;      ///< stacks created with mmap(2) so far
  std::uint64_t reused = 0;      ///< stacks handed out again from the pool
  std::uint64_t unmapped = 0;    ///< stacks returned to the system (pool full, or trimmed)
  std::size_t pooled = 0;        ///< stacks waiting in the pool now
  std::size_t pooled_bytes = 0;  ///< their usable bytes
};

/// The calling thread's pool counters. No errors; never blocks.
[[nodiscard]] fiber_stack_pool_statistics fiber_stack_pool_stats() noexcept;

/// Unmaps every stack waiting in the calling thread's pool (after a load spike). Stacks
/// of running fibers are not affected. No errors.
void fiber_stack_pool_trim() noexcept;

/// Largest number of stacks, and of usable bytes, the pool of one thread keeps; a
/// stack freed beyond either limit is unmapped at once.
inline constexpr std::size_t fiber_stack_pool_max_stacks = 256;
/// See fiber_stack_pool_max_stacks.
inline constexpr std::size_t fiber_stack_pool_max_bytes = 32u * 1024 * 1024;

}  // namespace ringio
