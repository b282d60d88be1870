// SPDX-License-Identifier: Apache-2.0
// ringio/http/metrics_handler.hpp — a ready handler that serves metrics as a
// Prometheus page: `routes.get("/metrics", http::metrics_handler(loops, &srv));`.
#pragma once

#include <functional>
#include <string>

#include "ringio/http/router.hpp"

namespace ringio {
class runtime;
}

namespace ringio::http {

class server;

/// A handler answering 200 with the page `page()` returns, as the Prometheus text
/// format (Content-Type text/plain; version=0.0.4). `page` is called on the loop that
/// serves the request, on each request.
[[nodiscard]] handler metrics_handler(std::function<std::string()> page);

/// A handler serving the metrics of every loop of `loops` (label loop="i") and, when
/// `srv` is given, of that server (ringio_http_*). Both must outlive the handler; the
/// loops may end meanwhile (a loop that has ended shows the figures it ended with,
/// runtime::metrics_of()). docs/operations.md ("Metrics") lists what the page holds.
[[nodiscard]] handler metrics_handler(runtime& loops, const server* srv = nullptr);

}  // namespace ringio::http
