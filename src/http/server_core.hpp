// SPDX-License-Identifier: Apache-2.0
// server_core — what every connection of one http::server shares, across threads: the
// handler, the options, the connection count, the drain signal, the log.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "server_counters.hpp"

namespace ringio::http::detail {

class server_core {
 public:
  server_core(handler h, server_options o);

  /// Counts a new connection in; false (and nothing counted) when at the limit.
  bool admit() noexcept {
    if (active_.fetch_add(1, std::memory_order_relaxed) < opts.max_connections) return true;
    active_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  void release() noexcept { active_.fetch_sub(1, std::memory_order_relaxed); }
  [[nodiscard]] std::size_t active() const noexcept { return active_.load(std::memory_order_relaxed); }

  void drain() noexcept { drain_.request_stop(); }
  /// Responses from now on close their connections; idle ones close after `grace`.
  void drain_gently(std::chrono::milliseconds grace) noexcept {
    if (grace.count() <= 0) {
      drain();
      return;
    }
    std::int64_t none = -1;
    closing_grace_ms_.compare_exchange_strong(none, grace.count(), std::memory_order_relaxed);
  }
  /// Whether responses close their connections now (either drain has begun).
  [[nodiscard]] bool closing() const noexcept {
    return closing_grace_ms_.load(std::memory_order_relaxed) >= 0 || drain_token_.stop_requested();
  }
  /// How long an idle connection stays open once drain_gently began; -1 before.
  [[nodiscard]] std::int64_t closing_grace_ms() const noexcept {
    return closing_grace_ms_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] const std::stop_token& drain_token() const noexcept { return drain_token_; }

  /// Writes one line to the log.
  void log(std::string_view line) const;
  /// The same, at most once per second per `kind` (a busy server must not flood it).
  void log_limited(std::atomic<std::int64_t>& last, std::string_view line) const;

  const handler handle;
  const server_options opts;
  /// The calling thread's counters of this server. The first call on a thread creates
  /// them (under a lock); later ones find them in a small per-thread cache.
  server_counters& counters();
  /// Every thread's counters summed, and the connection gauge.
  [[nodiscard]] server_metrics metrics() const;

  /// The router behind `handle`, when the server was made from one.
  const router* routes = nullptr;
  mutable std::atomic<std::int64_t> last_limit_log{0};
  mutable std::atomic<std::int64_t> last_error_log{0};

 private:
  std::atomic<std::size_t> active_{0};
  const std::uint64_t id_;  // unique per server_core in the process (the cache's key)
  mutable std::mutex shards_mu_;
  std::vector<std::pair<std::thread::id, std::unique_ptr<server_counters>>> shards_;
  std::stop_source drain_;
  std::stop_token drain_token_ = drain_.get_token();
  std::atomic<std::int64_t> closing_grace_ms_{-1};
};

/// Holds one admitted connection's place until the connection ends.
class admission {
 public:
  explicit admission(server_core& core) noexcept : core_(core) {}
  ~admission() { core_.release(); }
  admission(const admission&) = delete;
  admission& operator=(const admission&) = delete;

 private:
  server_core& core_;
};

}  // namespace ringio::http::detail
