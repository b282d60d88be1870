// SPDX-License-Identifier: Apache-2.0
// ringio/http/server_metrics.hpp — a snapshot of an http::server's metrics
// (server::metrics()), summed over the loop threads that served it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ringio::http {

/// What an http::server counted since it was created, summed over its loop threads:
/// a copy taken at one moment, from any thread (server::metrics()). docs/operations.md
/// ("Metrics") says what each field means.
struct server_metrics {
  /// Upper bounds in seconds of the request latency histogram's buckets; one more
  /// bucket counts what is slower than the last bound (+Inf).
  static constexpr std::array<double, 16> latency_bounds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                         0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};
  /// Buckets of the latency histogram: one per bound, and +Inf.
  static constexpr std::size_t latency_buckets = latency_bounds.size() + 1;

  /// Responses by status class: [0] 1xx, [1] 2xx, [2] 3xx, [3] 4xx, [4] 5xx. Errors the
  /// server answers itself (400, 408, 413, 431, 503) count too.
  std::array<std::uint64_t, 5> responses_by_class{};
  std::uint64_t connections_active = 0;  ///< connections being served now (gauge)
  std::uint64_t connections_idle = 0;    ///< of those, waiting for a request (gauge)
  /// Request latency, from a complete request head to its response queued for sending
  /// (the handler and the body included): counts per bucket, not cumulative.
  std::array<std::uint64_t, latency_buckets> latency_count{};
  std::uint64_t latency_sum_ns = 0;   ///< the sum of those latencies
  std::uint64_t request_bytes = 0;    ///< bytes of requests (heads and bodies) served
  std::uint64_t response_bytes = 0;   ///< bytes sent to clients (heads, bodies, files)
  std::uint64_t header_timeouts = 0;  ///< requests answered 408: the head came too slowly
  std::uint64_t body_timeouts = 0;    ///< requests answered 408: the body stalled or was too slow
  std::uint64_t idle_timeouts = 0;    ///< keep-alive connections closed by idle_timeout
  std::uint64_t send_timeouts = 0;    ///< connections ended because a send outlasted send_timeout
};

}  // namespace ringio::http
