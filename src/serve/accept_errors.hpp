// SPDX-License-Identifier: Apache-2.0
// accept_errors — what a failed accept means for the accept loop, and the back-off
// (with its rate-limited log line) after failures for want of resources.
#pragma once

#include <chrono>
#include <system_error>

#include "serve/rate_limited_log.hpp"

namespace ringio::detail {

enum class accept_failure {
  connection,  ///< this connection failed (reset before it was taken, ...): accept the next
  resources,   ///< out of descriptors or memory: wait, then accept again
  fatal,       ///< the listener itself is unusable: stop accepting
};

[[nodiscard]] accept_failure classify_accept_error(std::error_code ec) noexcept;

class accept_backoff {
 public:
  accept_backoff(std::chrono::milliseconds initial, std::chrono::milliseconds longest) noexcept;

  /// A resource failure: logs at most one warning per `longest` and returns how long
  /// to wait before the next accept.
  std::chrono::milliseconds failed(std::error_code ec) noexcept;
  /// An accept succeeded: the next failure waits `initial` again.
  void succeeded() noexcept { next_ = initial_; }

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds longest_;
  std::chrono::milliseconds next_;
  rate_limited_log lines_;
};

}  // namespace ringio::detail
