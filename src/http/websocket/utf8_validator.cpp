// SPDX-License-Identifier: Apache-2.0
#include "utf8_validator.hpp"

#include <cstring>

namespace ringio::http::detail {

bool utf8_validator::feed(const unsigned char* data, std::size_t size) noexcept {
  std::size_t i = 0;
  while (i < size) {
    if (need_ == 0) {
      // ASCII runs, eight bytes at a time.
      while (i + 8 <= size) {
        std::uint64_t word;
        std::memcpy(&word, data + i, 8);
        if ((word & 0x8080808080808080ull) != 0) break;
        i += 8;
      }
      if (i == size) break;
      const unsigned char b = data[i++];
      if (b < 0x80) continue;
      lo_ = 0x80;
      hi_ = 0xbf;
      if (b >= 0xc2 && b <= 0xdf) {
        need_ = 1;
      } else if (b >= 0xe0 && b <= 0xef) {
        need_ = 2;
        if (b == 0xe0) lo_ = 0xa0;  // overlong
        if (b == 0xed) hi_ = 0x9f;  // surrogates
      } else if (b >= 0xf0 && b <= 0xf4) {
        need_ = 3;
        if (b == 0xf0) lo_ = 0x90;  // overlong
        if (b == 0xf4) hi_ = 0x8f;  // past U+10FFFF
      } else {
        return false;  // a stray continuation byte, C0, C1, F5-FF
      }
    } else {
      const unsigned char b = data[i++];
      if (b < lo_ || b > hi_) return false;
      --need_;
      lo_ = 0x80;
      hi_ = 0xbf;
    }
  }
  return true;
}

bool is_valid_utf8(std::string_view text) noexcept {
  utf8_validator v;
  return v.feed(reinterpret_cast<const unsigned char*>(text.data()), text.size()) && v.complete();
}

}  // namespace ringio::http::detail
