// SPDX-License-Identifier: Apache-2.0
// percent_coding — the one implementation of %XX decoding (RFC 3986 2.1), shared by
// the public percent_decode(), query_params, the router's path parameters and the
// static files' path decoding.
#pragma once

#include <cstddef>
#include <string_view>

#include "char_class.hpp"

namespace ringio::http::detail {

/// The byte that the escape starting at s[i] (a '%') stands for, or -1 when s[i + 1]
/// and s[i + 2] are not two hex digits.
constexpr int escape_at(std::string_view s, std::size_t i) noexcept {
  if (i + 2 >= s.size()) return -1;
  int hi = hex_value(s[i + 1]);
  int lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
  return lo < 0 ? -1 : hi * 16 + lo;
}

inline constexpr std::size_t bad_escape = static_cast<std::size_t>(-1);
inline constexpr std::size_t no_room = static_cast<std::size_t>(-2);

/// Decodes `in` into `out`, which has room for `cap` bytes (in.size() always suffices:
/// decoding never lengthens). Returns the decoded length, bad_escape at a malformed
/// escape, or no_room when the result does not fit.
inline std::size_t decode_strict(std::string_view in, char* out, std::size_t cap) noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      int v = escape_at(in, i);
      if (v < 0) return bad_escape;
      c = static_cast<char>(v);
      i += 2;
    }
    if (n == cap) return no_room;
    out[n++] = c;
  }
  return n;
}

/// Decodes application/x-www-form-urlencoded text (a query's names and values) into
/// `out` (room for in.size() bytes): '+' is a space, and a '%' that starts no valid
/// escape is kept as it is, setting `malformed`. Returns the decoded length.
inline std::size_t decode_form(std::string_view in, char* out, bool& malformed) noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      int v = escape_at(in, i);
      if (v < 0) {
        malformed = true;
      } else {
        c = static_cast<char>(v);
        i += 2;
      }
    }
    out[n++] = c;
  }
  return n;
}

/// Whether `in` is fit to be a path parameter: every escape well formed, and none
/// that stands for '/' (it would hide a segment boundary) or NUL.
constexpr bool clean_capture(std::string_view in) noexcept {
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') continue;
    int v = escape_at(in, i);
    if (v <= 0 || v == '/') return false;
    i += 2;
  }
  return true;
}

}  // namespace ringio::http::detail
