// SPDX-License-Identifier: Apache-2.0
// file_path — turning a request path into a file below a root directory, safely.
#pragma once

#include <cstddef>
#include <string_view>

namespace ringio::http::detail {

/// Percent-decodes `encoded` into `out` (capacity `cap`, NUL-terminated) as a path
/// relative to the root: empty and "." segments dropped. Returns 0, or the status to
/// answer: 400 (bad %-escape, an encoded '/', a control character), 404 (a ".." segment: never
/// walk up), 414 (too long). An empty result means the root itself.
int decode_relative_path(std::string_view encoded, char* out, std::size_t cap, std::size_t& len) noexcept;

/// Whether `encoded` (as given to decode_relative_path) is in directory form: its last
/// segment is empty or "." ("a/", "a//", "a/.", "a/%2e"). Such a path never names a
/// regular file, though decoding drops that last segment.
bool names_directory(std::string_view encoded) noexcept;

/// openat2() of `rel` below `root_fd`, read-only and non-blocking (a FIFO must not hang
/// the loop), resolved by the kernel with RESOLVE_BENEATH: no "..", absolute symlink or
/// symlink leading out of the root is followed. Returns the fd or -errno (EXDEV, ELOOP
/// for escapes).
int open_beneath(int root_fd, const char* rel) noexcept;

}  // namespace ringio::http::detail
