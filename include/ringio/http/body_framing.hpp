// SPDX-License-Identifier: Apache-2.0
// ringio/http/body_framing.hpp — how the body of a response is delimited.
#pragma once

#include <cstdint>

namespace ringio::http {

/// How the body of a response is delimited.
enum class body_framing : std::uint8_t {
  none,            ///< no body (HEAD, 1xx, 204, 304, or Content-Length: 0)
  content_length,  ///< exactly content_length bytes
  chunked,         ///< Transfer-Encoding: chunked
  until_close,     ///< everything until the server closes the connection
};

}  // namespace ringio::http
