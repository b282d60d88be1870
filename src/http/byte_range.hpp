// SPDX-License-Identifier: Apache-2.0
// byte_range — the Range request field (RFC 9110 14.2) of GET on a file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ringio::http::detail {

struct byte_range {
  std::uint64_t first = 0;
  std::uint64_t last = 0;  // inclusive
};

/// At most this many ranges are served from one Range field.
constexpr std::size_t max_byte_ranges = 16;
using byte_range_list = std::array<byte_range, max_byte_ranges>;

enum class range_kind {
  ignore,         ///< absent, malformed, another unit, too many or overlapping ranges: send it all (200)
  satisfiable,    ///< send the ranges (206)
  unsatisfiable,  ///< 416 with "Content-Range: bytes */size"
};

/// Interprets a Range value for a representation of `size` bytes. When satisfiable,
/// ranges[0, count) are the satisfiable ones in the order sent, none overlapping
/// another (the unsatisfiable ones are left out).
range_kind parse_range(std::string_view value, std::uint64_t size, byte_range_list& ranges,
                       std::size_t& count) noexcept;

}  // namespace ringio::http::detail
