// SPDX-License-Identifier: Apache-2.0
#include "authority.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "char_class.hpp"

namespace ringio::http::detail {
namespace {

// The inside of "[...]": IPv6address, or IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ).
bool valid_ip_literal(std::string_view s) noexcept {
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) {
    std::size_t dot = s.find('.');
    if (dot == std::string_view::npos || dot < 2 || dot + 1 == s.size()) return false;
    for (std::size_t i = 1; i < dot; ++i)
      if (hex_value(s[i]) < 0) return false;
    for (char c : s.substr(dot + 1))
      if (c == '%' || (!is(c, cc_host) && c != ':')) return false;
    return true;
  }
  char text[INET6_ADDRSTRLEN];  // inet_pton wants a C string; longer text is no address
  if (s.size() >= sizeof text) return false;
  std::memcpy(text, s.data(), s.size());
  text[s.size()] = '\0';
  in6_addr addr{};
  return ::inet_pton(AF_INET6, text, &addr) == 1;
}

bool valid_port(std::string_view s) noexcept {
  unsigned value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > 65535) return false;
  }
  return true;
}

}  // namespace

bool valid_authority(std::string_view s, bool host_required) noexcept {
  // One pass up to the port's ':' (a Host field is checked on every request).
  std::size_t i = 0;
  if (s.starts_with('[')) {
    auto close = s.find(']');
    if (close == std::string_view::npos || !valid_ip_literal(s.substr(1, close - 1))) return false;
    i = close + 1;
    if (i < s.size() && s[i] != ':') return false;
  } else {
    for (; i < s.size(); ++i) {
      if (is(s[i], cc_host)) continue;
      if (s[i] == ':') break;  // the port follows: a reg-name holds no ':'
      if (s[i] != '%' || i + 2 >= s.size() || hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0) return false;
      i += 2;
    }
    if (i == 0 && host_required) return false;
  }
  return i == s.size() || valid_port(s.substr(i + 1));  // an empty port is valid, as is none
}

}  // namespace ringio::http::detail
