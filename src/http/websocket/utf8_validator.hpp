// SPDX-License-Identifier: Apache-2.0
// utf8_validator — checks UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// past U+10FFFF) fed in pieces, so a text message split over frames, or a character
// split between them, is checked as it arrives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ringio::http::detail {

class utf8_validator {
 public:
  /// Checks the next piece; false once the text so far cannot be valid UTF-8.
  [[nodiscard]] bool feed(const unsigned char* data, std::size_t size) noexcept;
  /// Whether the text fed so far ends on a character boundary.
  [[nodiscard]] bool complete() const noexcept { return need_ == 0; }
  /// Starts over.
  void reset() noexcept { need_ = 0; }

 private:
  std::uint8_t need_ = 0;   // continuation bytes still expected
  std::uint8_t lo_ = 0x80;  // the range of the next continuation byte
  std::uint8_t hi_ = 0xbf;
};

/// Whether `text` is valid UTF-8 as a whole.
[[nodiscard]] bool is_valid_utf8(std::string_view text) noexcept;

}  // namespace ringio::http::detail
