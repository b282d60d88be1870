// SPDX-License-Identifier: Apache-2.0
// preconditions — the conditional request fields of RFC 9110 13 for a file served by
// GET or HEAD: which apply, in which order, and what they decide.
#pragma once

#include <ctime>
#include <string_view>

#include "ringio/http/request.hpp"

namespace ringio::http::detail {

/// Evaluates If-Match, If-Unmodified-Since, If-None-Match and If-Modified-Since in the
/// order of RFC 9110 13.2.2 against a representation with the strong validator `etag`,
/// last modified at `modified`. Returns 0 (go on), 412 (a precondition failed) or 304
/// (the client's copy is current). Dates are accepted in every HTTP-date form; an
/// invalid one is ignored. If-Range is left to the range logic.
int check_preconditions(const request& r, std::string_view etag, std::time_t modified);

}  // namespace ringio::http::detail
