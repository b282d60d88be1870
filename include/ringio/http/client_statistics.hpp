// SPDX-License-Identifier: Apache-2.0
// ringio/http/client_statistics.hpp — counters of an http::client's connections.
#pragma once

#include <cstdint>

namespace ringio::http {

/// Counters of a client's connections.
struct client_statistics {
  /// Connections opened.
  std::uint64_t connections_opened = 0;
  /// Requests sent on a pooled connection.
  std::uint64_t connections_reused = 0;
  /// Requests sent again on a new connection after a pooled one turned out stale.
  std::uint64_t stale_retries = 0;
};

}  // namespace ringio::http
