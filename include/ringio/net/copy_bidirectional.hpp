// SPDX-License-Identifier: Apache-2.0
// ringio/net/copy_bidirectional.hpp — forward bytes both ways between two connected
// stream sockets (the heart of a TCP proxy) until both directions have ended.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <system_error>

#include "ringio/net/stream_socket.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio {

/// Settings of copy_bidirectional. Every field has a default, so designated
/// initializers may name any subset: `copy_options{.idle_timeout = 30s}`.
struct copy_options {
  /// End both directions with std::errc::timed_out when no byte has moved in either
  /// direction for this long. nullopt or zero: no idle timeout.
  std::optional<std::chrono::nanoseconds> idle_timeout = std::nullopt;
  /// Bytes of buffer per direction (both are allocated once per call). Must not be 0.
  std::size_t buffer_size = 16 * 1024;
};

/// What copy_bidirectional moved, and why it ended.
struct copy_result {
  /// Bytes received from `a` and sent to `b` (delivered to b's socket).
  std::uint64_t a_to_b = 0;
  /// Bytes received from `b` and sent to `a`.
  std::uint64_t b_to_a = 0;
  /// Empty when both directions reached end of stream and passed it on. Otherwise the
  /// first error of either side (connection_reset, broken_pipe, not_connected when
  /// the side an end of stream was passed to had already gone, ...), timed_out for
  /// the idle timeout, or operation_canceled for a stop.
  std::error_code error{};

  /// True when both directions ended cleanly.
  [[nodiscard]] bool ok() const noexcept { return !error; }
};

/// Copies from `a` to `b` and from `b` to `a` at the same time until both directions
/// are done. End of stream on one side is passed on with shutdown(SHUT_WR) of the other
/// while the opposite direction keeps flowing (half-close).
///
/// Errors: the returned result fails only when the copy cannot start (invalid_argument:
/// a buffer_size of 0, or `a` and `b` being the same socket; bad_file_descriptor: a
/// socket that is not open), with nothing read or written. Everything that happens
/// once copying has begun is reported in copy_result::error, together with the counts:
/// an error on either side (a reset, a failed send) stops both directions and, over
/// TCP, sets both sockets to close with a reset (SO_LINGER 0) without sending end of
/// stream: close them when it returns, and each peer reads connection_reset, never a
/// clean end that it could take for a complete transfer (other stream sockets are shut
/// down: end of stream is all they can say). The idle timeout shuts both sockets down
/// (SHUT_RDWR: each peer reads end of stream) and reports std::errc::timed_out.
///
/// Cancellation: a stop of the awaiting task's token ends both directions; the result
/// holds the counts and operation_canceled. The sockets are then left open and not
/// shut down, but bytes already received from one side and not yet sent to the other
/// are dropped (the counts tell what was delivered), so the streams cannot be resumed.
///
/// Both sockets must stay alive, and carry no other recv or send, until it completes.
[[nodiscard]] task<result<copy_result>> copy_bidirectional(stream_socket& a, stream_socket& b, copy_options opts = {});

}  // namespace ringio
