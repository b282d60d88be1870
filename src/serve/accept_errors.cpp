// SPDX-License-Identifier: Apache-2.0
#include "serve/accept_errors.hpp"

#include <algorithm>
#include <cerrno>

#include "ringio/log.hpp"

namespace ringio::detail {

accept_failure classify_accept_error(std::error_code ec) noexcept {
  if (ec.category() != std::system_category() && ec.category() != std::generic_category()) return accept_failure::fatal;
  switch (ec.value()) {
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
      return accept_failure::resources;
    // accept(2): errors of the pending connection, reported by accept; the next one
    // may well succeed.
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENETUNREACH:
    case EHOSTDOWN:
    case EHOSTUNREACH:
    case ENONET:
    case ENOPROTOOPT:
    case EOPNOTSUPP:
    case ETIMEDOUT:
    case EINTR:
    case EAGAIN:
      return accept_failure::connection;
    default:
      return accept_failure::fatal;
  }
}

accept_backoff::accept_backoff(std::chrono::milliseconds initial, std::chrono::milliseconds longest) noexcept
    : initial_(initial.count() > 0 ? initial : std::chrono::milliseconds(1)),
      longest_(longest > initial_ ? longest : initial_),
      next_(initial_),
      lines_(longest_) {}

std::chrono::milliseconds accept_backoff::failed(std::error_code ec) noexcept {
  const auto wait = next_;
  next_ = std::min(next_ * 2, longest_);
  if (log_enabled(log_level::warning) && lines_.due()) {
    const auto more = static_cast<unsigned long long>(lines_.take_suppressed());
    try {
      log(log_level::warning,
          "serve: accept: %s; pending connections wait, retrying with back-off up to %lld ms "
          "(%llu more failed accepts since the last report)",
          ec.message().c_str(), static_cast<long long>(longest_.count()), more);
    } catch (...) {
      // ec.message() could not allocate: the line is skipped.
    }
  }
  return wait;
}

}  // namespace ringio::detail
