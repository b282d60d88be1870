// SPDX-License-Identifier: Apache-2.0
// mime_types — Content-Type by file extension.
#pragma once

#include <string_view>

namespace ringio::http::detail {

/// The media type for `filename`'s extension (any case); application/octet-stream when
/// unknown. Text types carry "; charset=utf-8".
std::string_view mime_type_for(std::string_view filename) noexcept;

}  // namespace ringio::http::detail
