// SPDX-License-Identifier: Apache-2.0
#include "ringio/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

namespace ringio {
namespace detail {

std::atomic<int> log_threshold{static_cast<int>(log_level::info)};

namespace {

// Replaced rarely (start-up), read for every line that passes the threshold: a reader
// copies the pointer under the lock and calls the handler outside it, so a
// replacement never destroys a handler that is running. (Lines are not a hot path;
// std::atomic<std::shared_ptr> would do the same, but its lock is invisible to TSan.)
struct handler_slot {
  std::mutex mu;
  std::shared_ptr<const log_handler> handler;
};

handler_slot& current_handler() {
  static handler_slot slot;
  return slot;
}

void write_to_stderr(std::string_view text) noexcept {
  char line[1100];
  constexpr std::string_view prefix = "ringio: ";
  std::size_t n = std::min(text.size(), sizeof line - prefix.size() - 1);
  std::memcpy(line, prefix.data(), prefix.size());
  std::memcpy(line + prefix.size(), text.data(), n);
  line[prefix.size() + n] = '\n';
  // One write per line, so lines of concurrent threads do not interleave.
  (void)!::write(STDERR_FILENO, line, prefix.size() + n + 1);
}

}  // namespace

void emit_log(log_level level, std::string_view text) noexcept {
  std::shared_ptr<const log_handler> h;
  {
    handler_slot& slot = current_handler();
    std::lock_guard lk(slot.mu);
    h = slot.handler;
  }
  if (!h) {
    write_to_stderr(text);
    return;
  }
  try {
    (*h)(level, text);
  } catch (...) {
    // A log handler must not take the loop down.
  }
}

}  // namespace detail

std::string_view to_string(log_level level) noexcept {
  switch (level) {
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warning:
      return "warning";
    case log_level::error:
      return "error";
  }
  return "unknown";
}

void set_log_handler(log_handler handler) {
  std::shared_ptr<const log_handler> h;
  if (handler) h = std::make_shared<const log_handler>(std::move(handler));
  detail::handler_slot& slot = detail::current_handler();
  std::lock_guard lk(slot.mu);
  std::swap(slot.handler, h);  // the old handler goes with `h`, after the unlock
}

void set_log_level(log_level level) noexcept {
  detail::log_threshold.store(static_cast<int>(level), std::memory_order_relaxed);
}

log_level get_log_level() noexcept {
  return static_cast<log_level>(detail::log_threshold.load(std::memory_order_relaxed));
}

void log(log_level level, const char* format, ...) noexcept {
  if (!log_enabled(level)) return;
  char text[1024];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  if (n < 0) return;
  detail::emit_log(level, std::string_view(text, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof text - 1)));
}

}  // namespace ringio
