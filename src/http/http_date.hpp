// SPDX-License-Identifier: Apache-2.0
// http_date — HTTP-date (RFC 9110 5.6.7): IMF-fixdate formatting ("Sun, 06 Nov 1994
// 08:49:37 GMT"), parsing of it and of the two obsolete forms a recipient must accept,
// and the per-thread cached Date value, formatted once per second.
#pragma once

#include <ctime>
#include <optional>
#include <string_view>

namespace ringio::http::detail {

constexpr std::size_t http_date_size = 29;

/// Writes the 29 characters of `t` as an IMF-fixdate.
void format_http_date(std::time_t t, char* out) noexcept;

/// Parses an IMF-fixdate, an RFC 850 date ("Sunday, 06-Nov-94 08:49:37 GMT") or an
/// asctime date ("Sun Nov  6 08:49:37 1994"); nullopt for anything else. An RFC 850
/// two-digit year is the latest one not more than 50 years after `now`.
std::optional<std::time_t> parse_http_date(std::string_view s, std::time_t now) noexcept;
/// The same, relative to the current time.
std::optional<std::time_t> parse_http_date(std::string_view s) noexcept;

/// The current time as an IMF-fixdate; the view stays valid on this thread until the
/// next call. Re-formatted only when the second changes.
std::string_view current_http_date() noexcept;

}  // namespace ringio::http::detail
