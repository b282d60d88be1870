// SPDX-License-Identifier: Apache-2.0
// handshake — the pieces of the opening handshake both sides share (RFC 6455 section
// 4): the Sec-WebSocket-Accept value, keys, and comma-separated token lists.
#pragma once

#include <string>
#include <string_view>

#include "ringio/http/header_list.hpp"

namespace ringio::http::detail {

/// base64(SHA-1(key + the RFC's GUID)): the Sec-WebSocket-Accept for `key`.
[[nodiscard]] std::string websocket_accept_value(std::string_view key);
/// A fresh Sec-WebSocket-Key: 16 random bytes in base64.
[[nodiscard]] std::string websocket_random_key();
/// Whether `key` is 16 bytes in base64 (24 characters ending "==").
[[nodiscard]] bool valid_websocket_key(std::string_view key) noexcept;
/// Whether any field `name` of `headers` lists `token` (comma-separated, any case).
[[nodiscard]] bool header_has_token(const header_list& headers, std::string_view name, std::string_view token) noexcept;
/// Calls fn(token) for each comma-separated token of `value`, trimmed, empty ones skipped.
template <class Fn>
void for_each_token(std::string_view value, Fn&& fn) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view t = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (!t.empty()) fn(t);
  }
}

}  // namespace ringio::http::detail
