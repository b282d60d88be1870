// SPDX-License-Identifier: Apache-2.0
// server_counters — the live counters of one http::server on one thread. Only that
// thread writes them (relaxed load and store, no locked instruction); any thread reads.
// Beside them, that thread's relay of the server's drain signal.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stop_token>

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

  /// Stopped when the server's drain token is: the waits of this thread's connections
  /// obey it rather than the server's own token, on whose shared state every thread's
  /// receives would otherwise register and unregister their stop callbacks.
  [[nodiscard]] std::stop_token drain_token() const noexcept { return drain_relay_.get_token(); }
  /// Links drain_token() to the server's (once, when the counters are made).
  void relay_drain(const std::stop_token& server_drain) { drain_link_.emplace(server_drain, relay{&drain_relay_}); }

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

 private:
  struct relay {
    std::stop_source* target;
    void operator()() const noexcept { target->request_stop(); }
  };
  std::stop_source drain_relay_;
  std::optional<std::stop_callback<relay>> drain_link_;
};

}  // namespace ringio::http::detail
