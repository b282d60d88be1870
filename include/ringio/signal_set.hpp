// SPDX-License-Identifier: Apache-2.0
// ringio/signal_set.hpp — receive signals (SIGINT, SIGTERM, ...) as awaitable events,
// through a signalfd read by the loop like any other descriptor.
#pragma once

#include <sys/signalfd.h>

#include <csignal>
#include <initializer_list>

#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/result.hpp"

namespace ringio {
namespace detail {

extern const op_vtable signal_wait_vtable;

class signal_wait_op : public io_operation<signal_wait_op> {
 public:
  explicit signal_wait_op(fd_handle* h) noexcept : io_operation(&signal_wait_vtable), handle(h) {
    fd = h->get();
    want = interest::readable;
  }
  /// The signal number.
  result<int> get_result() const noexcept {
    if (res < 0) return unexpected(op_error(*this));
    return static_cast<int>(info.ssi_signo);
  }
  fd_handle* handle;
  signalfd_siginfo info{};
};

}  // namespace detail

/// Blocks the given signals in the calling thread and delivers them through wait().
/// Threads started afterwards inherit the blocked mask, so create the signal_set on
/// the main thread before starting others (a signal sent to the process is then
/// queued for the signalfd instead of running a handler). Throws std::system_error
/// if the signalfd cannot be created.
class signal_set {
 public:
  /// See the class: blocks `signals` in the calling thread and opens a signalfd.
  explicit signal_set(std::initializer_list<int> signals);
  signal_set(const signal_set&) = delete;
  signal_set& operator=(const signal_set&) = delete;

  /// Completes with the number of the next signal received.
  [[nodiscard]] detail::signal_wait_op wait() noexcept { return detail::signal_wait_op(&fd_); }

 private:
  detail::fd_handle fd_;
};

}  // namespace ringio
