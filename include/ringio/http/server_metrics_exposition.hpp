// SPDX-License-Identifier: Apache-2.0
// ringio/http/server_metrics_exposition.hpp — an http::server's metrics as Prometheus
// families (ringio_http_*).
#pragma once

#include "ringio/http/server_metrics.hpp"
#include "ringio/metrics/prometheus_writer.hpp"

namespace ringio::http {

/// Writes every family of server_metrics (docs/operations.md, "Metrics"), without
/// labels but the status class of ringio_http_responses_total and the kind of
/// ringio_http_timeouts_total.
void write_server_metrics(prometheus_writer& out, const server_metrics& m);

}  // namespace ringio::http
