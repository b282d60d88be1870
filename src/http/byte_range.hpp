// byte_range — the Range request field (RFC 9110 14.2), single ranges only.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringio::http::detail {

struct byte_range {
  std::uint64_t first = 0;
  std::uint64_t last = 0;  // inclusive
};

enum class range_kind {
  ignore,         ///< absent, malformed, another unit or several ranges: send it all (200)
  satisfiable,    ///< send `range` (206)
  unsatisfiable,  ///< 416 with "Content-Range: bytes */size"
};

/// Interprets a Range value for a representation of `size` bytes.
range_kind parse_range(std::string_view value, std::uint64_t size, byte_range& range) noexcept;

}  // namespace ringio::http::detail
