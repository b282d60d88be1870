// SPDX-License-Identifier: Apache-2.0
// ringio/http/url.hpp — the absolute http:// and https:// URLs the client fetches, as
// views into the text they were parsed from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ringio/result.hpp"

namespace ringio::http {

/// A parsed absolute URL: scheme, host, port and request target. Every view points into
/// the text given to parse_url, which must outlive it.
struct url {
  /// True for https://.
  bool tls = false;
  /// The host: a name, an IPv4 literal, or an IPv6 literal without its brackets.
  std::string_view host;
  /// True when host is an IPv6 literal (written "[...]" in the URL and the Host field).
  bool ipv6_literal = false;
  /// The port: the one written, else 80 (http) or 443 (https).
  std::uint16_t port = 80;
  /// Whether the port was written in the URL.
  bool explicit_port = false;
  /// Path and query as written ("/a/b?x=1"), the fragment left out; may be empty or
  /// start with '?', in which case the request target is "/" followed by it.
  std::string_view target;

  /// The default port of the scheme (80 or 443).
  [[nodiscard]] std::uint16_t default_port() const noexcept { return tls ? 443 : 80; }
  /// Whether `other` has the same scheme, host (any case) and port.
  [[nodiscard]] bool same_origin(const url& other) const noexcept;
};

/// Parses "http://host[:port][/path][?query][#fragment]" (or https://; scheme and host
/// any case). The host is a DNS name (letters, digits, '-', '.', '_'), an IPv4 literal or
/// a bracketed IPv6 literal. Errors (client_errc::bad_url): another scheme, user info
/// ("user@host"), an empty host, a bad port (not digits, over 65535), spaces, control
/// or non-ASCII characters, a '%' not followed by two hex digits. Not asynchronous:
/// nothing to cancel.
[[nodiscard]] result<url> parse_url(std::string_view text);

/// The absolute URL that a Location field `location` names, relative to `base`: RFC 3986
/// section 5.2 reference resolution, "." and ".." segments removed (section 5.2.4), the
/// fragment kept. Errors: client_errc::bad_redirect when it is empty, names a scheme
/// other than http/https, or is "http:" / "https:" without "//" (read strictly). Not
/// asynchronous: nothing to cancel.
[[nodiscard]] result<std::string> resolve_location(const url& base, std::string_view location);

}  // namespace ringio::http
