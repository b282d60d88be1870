// SPDX-License-Identifier: Apache-2.0
// ringio/http/client_response.hpp — a whole response as http::client returns it:
// status, fields and body, owned.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringio::http {

/// A complete response received by http::client.
struct client_response {
  /// The status code.
  int status = 0;
  /// The reason phrase.
  std::string reason;
  /// The fields, in the order received (name as sent, value trimmed).
  std::vector<std::pair<std::string, std::string>> headers;
  /// The body, decoded from its framing (chunked or not).
  std::string body;

  /// The value of the first field called `name` (any case); empty if none.
  [[nodiscard]] std::string_view header(std::string_view name) const noexcept;
};

}  // namespace ringio::http
