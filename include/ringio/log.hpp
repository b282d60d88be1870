// SPDX-License-Identifier: Apache-2.0
// ringio/log.hpp — where ringio's own diagnostics go: one line per event, with a level,
// to a handler the application may replace (stderr by default).
#pragma once

#include <atomic>
#include <functional>
#include <string_view>

namespace ringio {

/// How much a log line matters.
enum class log_level : int { debug = 0, info = 1, warning = 2, error = 3 };

/// The name of `level` ("debug", "info", "warning", "error").
[[nodiscard]] std::string_view to_string(log_level level) noexcept;

/// Receives every line at or above the threshold: the level and the text, without the
/// trailing newline. It may be called from any loop thread, concurrently: it must be
/// thread-safe. It must not throw (an exception is swallowed) and should not block.
using log_handler = std::function<void(log_level, std::string_view)>;

namespace detail {
extern std::atomic<int> log_threshold;
void emit_log(log_level level, std::string_view text) noexcept;
}  // namespace detail

/// Replaces the handler (an empty function restores the default, which writes
/// "ringio: <text>" and a newline to stderr with one write). Set it at start-up, before
/// loops run: changing it while other threads log is safe (they use the old handler
/// or the new one), but a line logged during the change may go to either. No errors;
/// not a cancellation point.
void set_log_handler(log_handler handler);

/// Lines below `level` are dropped before any formatting (default: info). Thread-safe.
void set_log_level(log_level level) noexcept;

/// The current threshold.
[[nodiscard]] log_level get_log_level() noexcept;

/// True when a line at `level` would reach the handler.
[[nodiscard]] inline bool log_enabled(log_level level) noexcept {
  return static_cast<int>(level) >= detail::log_threshold.load(std::memory_order_relaxed);
}

/// Logs `text` at `level` (dropped without any work below the threshold). Never throws.
inline void log_line(log_level level, std::string_view text) noexcept {
  if (log_enabled(level)) detail::emit_log(level, text);
}

/// Logs a printf-style message at `level`. Below the threshold it returns at once;
/// otherwise it formats into a stack buffer (no allocation; lines over 1 KiB are
/// truncated) and calls the handler. Never throws.
[[gnu::format(printf, 2, 3)]] void log(log_level level, const char* format, ...) noexcept;

}  // namespace ringio
