// http_date — IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"): formatting, parsing,
// and the per-thread cached Date value, formatted once per second.
#pragma once

#include <ctime>
#include <optional>
#include <string_view>

namespace ringio::http::detail {

constexpr std::size_t http_date_size = 29;

/// Writes the 29 characters of `t` as an IMF-fixdate.
void format_http_date(std::time_t t, char* out) noexcept;

/// Parses an IMF-fixdate; nullopt for anything else (obsolete formats included).
std::optional<std::time_t> parse_http_date(std::string_view s) noexcept;

/// The current time as an IMF-fixdate; the view stays valid on this thread until the
/// next call. Re-formatted only when the second changes.
std::string_view current_http_date() noexcept;

}  // namespace ringio::http::detail
