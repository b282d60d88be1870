#include "ringio/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>

namespace ringio {
namespace detail {

std::atomic<int> log_threshold{static_cast<int>(log_level::info)};

namespace {

// Replaced rarely (start-up), read on every line: readers take a reference to the
// current handler, so a replacement never destroys one that is running.
std::atomic<std::shared_ptr<const log_handler>>& current_handler() {
  static std::atomic<std::shared_ptr<const log_handler>> handler;
  return handler;
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
  std::shared_ptr<const log_handler> h = current_handler().load(std::memory_order_acquire);
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
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warning: return "warning";
    case log_level::error: return "error";
  }
  return "unknown";
}

void set_log_handler(log_handler handler) {
  std::shared_ptr<const log_handler> h;
  if (handler) h = std::make_shared<const log_handler>(std::move(handler));
  detail::current_handler().store(std::move(h), std::memory_order_release);
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
