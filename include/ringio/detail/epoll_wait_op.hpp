// SPDX-License-Identifier: Apache-2.0
// ringio/detail/epoll_wait_op.hpp — takes the ready events of an epoll set ringio does
// not own, waiting until there is at least one: IORING_OP_EPOLL_WAIT where the kernel
// has it, a readiness wait on the epoll descriptor and epoll_wait(2) with no timeout
// elsewhere.
#pragma once

#include <sys/epoll.h>

#include <climits>
#include <cstddef>
#include <span>

#include "ringio/detail/io_operation.hpp"

namespace ringio::detail {

extern const op_vtable epoll_wait_vtable;

class epoll_wait_op : public io_operation<epoll_wait_op> {
 public:
  epoll_wait_op(int epoll_fd, std::span<epoll_event> events) noexcept
      : io_operation(&epoll_wait_vtable),
        events_(events.data()),
        max_(events.size() > static_cast<std::size_t>(INT_MAX) ? INT_MAX : static_cast<int>(events.size())) {
    fd = epoll_fd;
    want = interest::readable;
  }
  /// The number of events written to the front of the span (at least 1), or the error.
  result<std::size_t> get_result() noexcept { return size_result(*this); }

  /// The caller's event buffer and its size (for the backends).
  [[nodiscard]] epoll_event* events() const noexcept { return events_; }
  [[nodiscard]] int max_events() const noexcept { return max_; }

 private:
  epoll_event* events_;
  int max_;
};

}  // namespace ringio::detail
