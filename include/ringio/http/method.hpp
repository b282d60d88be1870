// SPDX-License-Identifier: Apache-2.0
// ringio/http/method.hpp — the request methods the server implements.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringio::http {

/// The standard methods (RFC 9110 section 9 and PATCH). Method names are case-sensitive:
/// "get" is not GET. A request with any other method is answered 501.
enum class method : std::uint8_t { get, head, post, put, delete_, connect, options, trace, patch, unknown };

/// "GET", "HEAD", ...; "" for method::unknown.
std::string_view to_string(method m) noexcept;

/// The method named exactly `name`, or method::unknown.
method parse_method(std::string_view name) noexcept;

}  // namespace ringio::http
