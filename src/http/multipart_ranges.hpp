// SPDX-License-Identifier: Apache-2.0
// multipart_ranges — a 206 response carrying several ranges of a file as
// multipart/byteranges (RFC 9110 14.6).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "byte_range.hpp"
#include "ringio/detail/fd_handle.hpp"
#include "ringio/http/response.hpp"

namespace ringio::http::detail {

/// A 206 response whose body holds each of `ranges` of the file `fd` (`size` bytes of
/// `content_type`) as one part, in order, between random boundaries. The body is
/// streamed, each range read through the ring as it is sent (chunked for HTTP/1.1).
response multipart_ranges(ringio::detail::fd_handle fd, std::span<const byte_range> ranges, std::uint64_t size,
                          std::string_view content_type);

}  // namespace ringio::http::detail
