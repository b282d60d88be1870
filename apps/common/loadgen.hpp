// SPDX-License-Identifier: Apache-2.0
// loadgen — what ringio's load generators (ping, echo_bench, churn_bench) share: the
// target address, the closed-loop round-trip engine, payload stamping for --verify,
// process CPU time and the machine-readable `RESULT {json}` line.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli.hpp"
#include "common/latency_histogram.hpp"
#include "ringio/backend_kind.hpp"
#include "ringio/net/socket_address.hpp"

namespace apps {

/// host:port as a socket address; a bad --host is a usage error (exit 2).
ringio::socket_address target_address(cli& args, const std::string& host, std::uint16_t port);

/// The share of `total` items that part `i` of `parts` gets (the first total % parts
/// parts get one more), so that sessions spread evenly over threads.
constexpr std::size_t share_of(std::size_t total, unsigned parts, unsigned i) noexcept {
  return total / parts + (i < total % parts ? 1 : 0);
}

/// User + system CPU time of the whole process so far, in seconds.
double process_cpu_seconds() noexcept;

/// Fills p[0, len) with a pattern that depends on `seed` (once per buffer).
void fill_payload(std::byte* p, std::size_t len, std::uint64_t seed) noexcept;
/// Writes `seq` into the first (and, for len >= 16, the last) 8 bytes, so that every
/// round trip sends different bytes and a stale or misplaced echo is caught.
void stamp_payload(std::byte* p, std::size_t len, std::uint64_t seq) noexcept;

/// One `RESULT {...}` line: a flat JSON object, keys in the order added.
class result_json {
 public:
  explicit result_json(std::string_view tool);
  result_json& add(std::string_view key, double value, int decimals = 3);
  result_json& add(std::string_view key, std::uint64_t value);
  result_json& add(std::string_view key, std::int64_t value);
  result_json& add(std::string_view key, unsigned value) { return add(key, std::uint64_t{value}); }
  result_json& add(std::string_view key, std::string_view value);
  result_json& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  result_json& add(std::string_view key, bool value);
  /// Prints `RESULT {...}` on stdout and flushes.
  void print() const;

 private:
  void key(std::string_view k);
  std::string text_;
};

/// A closed-loop request/response load: `connections` sockets spread over `threads`
/// loop threads; all connect first; then each loops "send_all length bytes,
/// recv_exact length bytes" until the window ends. Round trips are counted (and
/// their latency recorded) when they complete inside the measured window, which
/// starts warmup_s after the last connection is up and lasts duration_s.
struct roundtrip_config {
  std::string tool;  // program name for messages
  ringio::socket_address address;
  unsigned threads = 1;
  std::size_t connections = 1;
  std::size_t length = 16384;
  double warmup_s = 0;
  double duration_s = 10;
  /// Stamp every request and compare every reply with what was sent.
  bool verify = false;
  /// How each round trip's operations are run: awaited directly (tasks), as senders
  /// awaited by the session (senders), or each raced against a timer with
  /// exec::when_any (when_any: op_timeout bounds every send and receive).
  enum class client_mode { tasks, senders, when_any } mode = client_mode::tasks;
  std::chrono::milliseconds op_timeout{10000};
  std::optional<ringio::backend_kind> backend;
  std::chrono::milliseconds connect_timeout{10000};
  /// Connects in flight at a time per thread (a listen backlog is finite).
  unsigned connect_parallel = 512;
  /// Local addresses the connections take in turn; empty: the kernel chooses.
  /// run_roundtrips fills it itself when more connections go to a 127.x.x.x server
  /// than one source address has ephemeral ports (see loopback_sources).
  std::vector<ringio::socket_address> sources;
};

/// Source addresses 127.0.0.1, 127.0.0.2, ... enough for `connections` connections
/// towards one IPv4 loopback address and port, each source keeping a quarter of the
/// ephemeral range free; empty when one source is enough or `to` is not loopback.
std::vector<ringio::socket_address> loopback_sources(const ringio::socket_address& to, std::size_t connections);

struct roundtrip_report {
  bool started = false;      // the runtime started (else `first_error` says why)
  std::string backend;       // "uring", "epoll" or "uring-poll"
  std::string backend_line;  // io_context::describe() of the first loop
  std::uint64_t connected = 0;
  std::uint64_t connect_errors = 0;  // connections that could not be opened
  std::uint64_t session_errors = 0;  // connections that failed after connecting
  std::uint64_t verify_errors = 0;   // of which: the reply differed from the request
  std::uint64_t round_trips = 0;     // completed inside the window
  std::uint64_t bytes = 0;           // received back inside the window
  double seconds = 0;                // the window's measured length
  double cpu_seconds = 0;            // process CPU time during the window
  std::unique_ptr<latency_histogram> latency = std::make_unique<latency_histogram>();
  std::string first_error;  // the first failure, for the message
};

/// Runs the load. Prints `<tool>: backend ...` once the loops are up. Never throws for
/// network errors: they are counted in the report.
roundtrip_report run_roundtrips(const roundtrip_config& cfg);

/// Nanoseconds to microseconds, for printing.
inline double to_us(std::uint64_t ns) noexcept { return static_cast<double>(ns) / 1000.0; }

}  // namespace apps
