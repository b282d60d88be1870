// SPDX-License-Identifier: Apache-2.0
// ringio/http/status.hpp — reason phrases of HTTP status codes.
#pragma once

#include <string_view>

namespace ringio::http {

/// "OK" for 200, "Not Found" for 404, ...; "Unknown" for codes without a standard phrase.
std::string_view reason_phrase(int status) noexcept;

/// True for statuses whose responses never carry a body (1xx, 204, 304).
constexpr bool status_has_no_body(int status) noexcept { return status < 200 || status == 204 || status == 304; }

}  // namespace ringio::http
