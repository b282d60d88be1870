// SPDX-License-Identifier: Apache-2.0
// ringio/detail/fd_generation.hpp — a process-wide counter per fd number, bumped
// whenever ringio closes that fd. The epoll backend registers an fd once (edge
// triggered) and compares generations to notice that the number now names another file.
#pragma once

#include <cstdint>

namespace ringio::detail {

/// The fd number is about to be closed (call before close(2)).
void note_fd_closed(int fd) noexcept;
/// How many times ringio has closed this fd number (0 if never).
std::uint32_t fd_generation(int fd) noexcept;

}  // namespace ringio::detail
