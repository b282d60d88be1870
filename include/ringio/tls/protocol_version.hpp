// SPDX-License-Identifier: Apache-2.0
// ringio/tls/protocol_version.hpp — the TLS protocol versions a context may allow.
#pragma once

namespace ringio::tls {

/// A TLS protocol version (older ones are never enabled).
enum class protocol_version {
  tls1_2,  ///< TLS 1.2 (RFC 5246)
  tls1_3,  ///< TLS 1.3 (RFC 8446)
};

}  // namespace ringio::tls
