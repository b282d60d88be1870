// SPDX-License-Identifier: Apache-2.0
// ringio/http/percent_decode.hpp — decoding of %XX escapes (RFC 3986 2.1) in a path,
// a path segment or any other percent-encoded text. '+' is left as it is: form data
// (a query string) is decoded by query_params, where '+' means a space.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "ringio/result.hpp"

namespace ringio::http {

/// Returns `encoded` with every "%XX" (two hex digits, either case) replaced by the
/// byte it stands for; the result may hold any byte, NUL and '/' included. Errors:
/// std::errc::invalid_argument when a '%' is not followed by two hex digits. Not an
/// asynchronous operation: nothing to cancel.
[[nodiscard]] result<std::string> percent_decode(std::string_view encoded);

/// The same into `out`, allocating nothing; returns the decoded length (never more
/// than encoded.size(), so an `out` that large always suffices). Errors:
/// std::errc::invalid_argument for a malformed escape, std::errc::no_buffer_space when
/// the decoded text does not fit in `out` (its contents are then unspecified). Not an
/// asynchronous operation: nothing to cancel.
[[nodiscard]] result<std::size_t> percent_decode(std::string_view encoded, std::span<char> out) noexcept;

}  // namespace ringio::http
