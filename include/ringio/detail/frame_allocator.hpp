// SPDX-License-Identifier: Apache-2.0
// ringio/detail/frame_allocator.hpp — coroutine frames come from a per-thread cache of
// recently freed frames, so spawning a connection handler in steady state does not call
// the global allocator. Sanitizer builds bypass the cache so that use-after-free of a
// frame is still caught.
#pragma once

#include <cstddef>

namespace ringio::detail {

void* frame_allocate(std::size_t n);
void frame_deallocate(void* p, std::size_t n) noexcept;
/// Frees every frame the calling thread's cache holds (after a load spike).
void frame_cache_trim() noexcept;

}  // namespace ringio::detail
