// SPDX-License-Identifier: Apache-2.0
// response_parts — the module's own way into a response: a Content-Type and header
// fields borrowed rather than copied (static_files' cached files keep theirs formatted,
// so that a hit allocates nothing).
#pragma once

#include <string_view>

#include "ringio/http/response.hpp"

namespace ringio::http::detail {

struct response_parts {
  /// Makes `content_type` and `fields` (each "Name: value\r\n", already checked) the
  /// response's, without copying: both must stay valid until the response is sent.
  static void borrow(response& r, std::string_view content_type, std::string_view fields) noexcept;
};

}  // namespace ringio::http::detail
