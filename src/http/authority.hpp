// SPDX-License-Identifier: Apache-2.0
// authority — host and port as a Host field or an absolute-form target carries them
// (RFC 9110 4.2 and 7.2 with the grammar of RFC 3986 3.2.2-3.2.3).
#pragma once

#include <string_view>

namespace ringio::http::detail {

/// Whether `s` is uri-host [":" port]: a reg-name (letters, digits, "-._~", sub-delims,
/// %XX), an IPv6 address or IPvFuture in brackets, and a port of at most 65535 (it may
/// be empty, as the grammar allows). Userinfo ("user@host") is not accepted. An empty
/// host is accepted only without `host_required` (an empty Host field is valid).
bool valid_authority(std::string_view s, bool host_required) noexcept;

}  // namespace ringio::http::detail
