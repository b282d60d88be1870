// SPDX-License-Identifier: Apache-2.0
// ringio/backend_kind.hpp — the ways an io_context can wait for I/O.
#pragma once

#include <optional>
#include <string_view>

namespace ringio {

enum class backend_kind {
  uring,       ///< io_uring, completion based: the kernel performs the I/O (default)
  epoll,       ///< epoll, readiness based: try the syscall, wait on EAGAIN, retry
  uring_poll,  ///< io_uring used only to watch fds (POLL_ADD); ringio does the syscalls
  sim,         ///< the thread's sim::world: virtual time and a simulated TCP network
};

/// "uring", "epoll", "uring-poll" or "sim".
std::string_view to_string(backend_kind k) noexcept;

/// Parses "uring", "epoll", "uring-poll" or "sim"; nullopt for anything else.
std::optional<backend_kind> parse_backend(std::string_view name) noexcept;

}  // namespace ringio
