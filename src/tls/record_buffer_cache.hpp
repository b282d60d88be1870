// SPDX-License-Identifier: Apache-2.0
// Record-sized buffers borrowed per operation from a per-thread cache, so that an idle
// TLS connection holds none and a busy one does not call the allocator per record.
#pragma once

#include <cstddef>

namespace ringio::tls::detail {

/// Room for one TLS record of the largest size (16 KiB of data, 2 KiB of expansion,
/// the header) and some of the next one.
constexpr std::size_t record_buffer_size = 18 * 1024 + 512;

/// A buffer of record_buffer_size bytes from the calling thread's cache (or new).
std::byte* borrow_record_buffer();
/// Gives `b` back to the calling thread's cache (freed when the cache is full).
void return_record_buffer(std::byte* b) noexcept;

}  // namespace ringio::tls::detail
