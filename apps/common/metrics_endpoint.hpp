// SPDX-License-Identifier: Apache-2.0
// metrics_endpoint — what `--metrics-port P` starts in the server apps: a small HTTP
// server on loop 0 answering GET /metrics with the Prometheus page of every loop
// (and of the app's HTTP server, if it has one).
#pragma once

#include <memory>
#include <optional>
#include <stop_token>

#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/runtime.hpp"

namespace apps {

class metrics_endpoint {
 public:
  /// Binds `at` now (false and a log line when it cannot).
  bool bind(const ringio::socket_address& at);
  /// Starts serving on loop 0 of `loops` and prints "<name>: metrics on <address>"
  /// on stdout; `observed` (optional) is the app's HTTP server, whose metrics the page
  /// adds. Serving ends at stop().
  void start(ringio::runtime& loops, const ringio::http::server* observed, const char* name);
  /// Ends serving (any thread): the listener closes, connections finish their request.
  void stop() noexcept { stop_.request_stop(); }

 private:
  std::optional<ringio::stream_listener> listener_;
  ringio::http::router routes_;
  std::unique_ptr<ringio::http::server> server_;
  std::stop_source stop_;
};

}  // namespace apps
