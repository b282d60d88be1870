// SPDX-License-Identifier: Apache-2.0
// server_counters — the live counters of one http::server on one thread. Only that
// thread writes them (relaxed load and store, no locked instruction); any thread reads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "ringio/detail/loop_counter.hpp"
#include "ringio/http/server_metrics.hpp"

namespace ringio::http::detail {

using ringio::detail::loop_counter;

struct server_counters {
  loop_counter responses_by_class[5];
  loop_counter connections_idle;
  loop_counter latency[server_metrics::latency_buckets];
  loop_counter latency_sum_ns, request_bytes, response_bytes;
  loop_counter header_timeouts, body_timeouts, idle_timeouts, send_timeouts;

  void note_status(int status) noexcept {
    if (status >= 100 && status <= 599) ++responses_by_class[static_cast<std::size_t>(status / 100 - 1)];
  }
  void note_latency(std::chrono::nanoseconds d) noexcept {
    const double s = std::chrono::duration<double>(d).count();
    std::size_t b = 0;
    while (b < server_metrics::latency_bounds.size() && s > server_metrics::latency_bounds[b]) ++b;
    ++latency[b];
    latency_sum_ns.add(static_cast<std::uint64_t>(d.count()));
  }
  /// Adds these counters to `m`.
  void add_to(server_metrics& m) const noexcept {
    for (std::size_t c = 0; c < 5; ++c) m.responses_by_class[c] += responses_by_class[c].get();
    for (std::size_t b = 0; b < server_metrics::latency_buckets; ++b) m.latency_count[b] += latency[b].get();
    m.connections_idle += connections_idle.get();
    m.latency_sum_ns += latency_sum_ns.get();
    m.request_bytes += request_bytes.get();
    m.response_bytes += response_bytes.get();
    m.header_timeouts += header_timeouts.get();
    m.body_timeouts += body_timeouts.get();
    m.idle_timeouts += idle_timeouts.get();
    m.send_timeouts += send_timeouts.get();
  }
};

}  // namespace ringio::http::detail
