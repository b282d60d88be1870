// SPDX-License-Identifier: Apache-2.0
// write_server_metrics: one family per server_metrics field.
#include "ringio/http/server_metrics_exposition.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace ringio::http {

void write_server_metrics(prometheus_writer& out, const server_metrics& m) {
  static constexpr std::array<std::string_view, 5> classes{"1xx", "2xx", "3xx", "4xx", "5xx"};
  out.family("ringio_http_responses_total", "counter", "Responses by status class.");
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const metric_label labels[] = {{"class", classes[c]}};
    out.sample("ringio_http_responses_total", labels, m.responses_by_class[c]);
  }
  out.family("ringio_http_connections_active", "gauge", "Connections being served.");
  out.sample("ringio_http_connections_active", {}, m.connections_active);
  out.family("ringio_http_connections_idle", "gauge", "Connections waiting for a request.");
  out.sample("ringio_http_connections_idle", {}, m.connections_idle);
  out.family("ringio_http_request_duration_seconds", "histogram",
             "From a complete request head to its response queued for sending.");
  out.histogram("ringio_http_request_duration_seconds", {}, server_metrics::latency_bounds, m.latency_count,
                static_cast<double>(m.latency_sum_ns) * 1e-9);
  out.family("ringio_http_request_bytes_total", "counter", "Bytes of requests (heads and bodies) served.");
  out.sample("ringio_http_request_bytes_total", {}, m.request_bytes);
  out.family("ringio_http_response_bytes_total", "counter", "Bytes sent to clients.");
  out.sample("ringio_http_response_bytes_total", {}, m.response_bytes);
  out.family("ringio_http_timeouts_total", "counter", "Timeouts by kind (header, body, idle, send).");
  const std::array<std::pair<std::string_view, std::uint64_t>, 4> timeouts{
      {{"header", m.header_timeouts}, {"body", m.body_timeouts}, {"idle", m.idle_timeouts}, {"send", m.send_timeouts}}};
  for (const auto& [kind, n] : timeouts) {
    const metric_label labels[] = {{"kind", kind}};
    out.sample("ringio_http_timeouts_total", labels, n);
  }
}

}  // namespace ringio::http
