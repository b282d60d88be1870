// SPDX-License-Identifier: Apache-2.0
// char_class — byte classes of RFC 9110/9112 grammar, as one constexpr table.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace ringio::http::detail {

enum : std::uint8_t {
  cc_token = 1,   // tchar: field names, methods, chunk-extension names
  cc_target = 2,  // bytes allowed in a request-target: visible ASCII and obs-text
  cc_value = 4,   // field-value bytes: HTAB, SP, VCHAR, obs-text
  cc_qdtext = 8,  // quoted-string text: cc_value without '"' and '\'
  cc_host = 16,   // reg-name bytes besides pct-encoded (RFC 3986): unreserved and sub-delims
};

constexpr std::array<std::uint8_t, 256> make_char_table() {
  std::array<std::uint8_t, 256> t{};
  constexpr std::string_view token_punct = "!#$%&'*+-.^_`|~";
  constexpr std::string_view host_punct = "-._~!$&'()*+,;=";
  for (int c = 0; c < 256; ++c) {
    std::uint8_t f = 0;
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum || token_punct.find(static_cast<char>(c)) != std::string_view::npos) f |= cc_token;
    bool visible = (c > 0x20 && c < 0x7f) || c >= 0x80;
    if (visible) f |= cc_target;
    if (visible || c == ' ' || c == '\t') f |= cc_value;
    if ((f & cc_value) && c != '"' && c != '\\') f |= cc_qdtext;
    if (alnum || host_punct.find(static_cast<char>(c)) != std::string_view::npos) f |= cc_host;
    t[static_cast<std::size_t>(c)] = f;
  }
  return t;
}

inline constexpr std::array<std::uint8_t, 256> char_table = make_char_table();

constexpr bool is(char c, std::uint8_t cls) noexcept { return (char_table[static_cast<unsigned char>(c)] & cls) != 0; }
constexpr bool is_ws(char c) noexcept { return c == ' ' || c == '\t'; }
constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The first byte in [p, end) below `limit` or equal to DEL, or end. Eight bytes per
/// step: with limit 0x20 it finds the control characters (HTAB included) that end a
/// field value; with 0x21 also the SP that ends a request-target.
template <unsigned char limit>
inline const char* find_below(const char* p, const char* end) noexcept {
  static_assert(limit <= 0x80, "the word test is exact only for limits up to 0x80");
  constexpr std::uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  while (end - p >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    std::uint64_t below = (w - ones * limit) & ~w & high;  // some byte < limit (exact as a whole)
    std::uint64_t del = w ^ (ones * 0x7f);
    del = (del - ones) & ~del & high;  // some byte == 0x7f
    if ((below | del) != 0) break;
    p += 8;
  }
  while (p < end && static_cast<unsigned char>(*p) >= limit && *p != 0x7f) ++p;
  return p;
}
inline const char* find_control(const char* p, const char* end) noexcept { return find_below<0x20>(p, end); }

/// Whether every byte of s is a field-value byte (HTAB, SP, VCHAR, obs-text).
inline bool valid_value(std::string_view s) noexcept {
  const char* end = s.data() + s.size();
  for (const char* p = find_control(s.data(), end); p != end; p = find_control(p + 1, end))
    if (*p != '\t') return false;
  return true;
}

/// Removes leading and trailing SP/HTAB.
constexpr std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

/// Splits a field line "name: value" (without CRLF). False if it is not one: empty or
/// non-token name, whitespace before the colon or at the start (obs-fold), control
/// characters in the value.
bool split_field_line(std::string_view line, std::string_view& name, std::string_view& value) noexcept;

/// Calls fn(element) for each non-empty element of a comma-separated list, trimmed.
template <class Fn>
constexpr void for_each_list_element(std::string_view list, Fn&& fn) {
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view item = trim_ows(list.substr(0, comma));
    if (!item.empty()) fn(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace ringio::http::detail
