// SPDX-License-Identifier: Apache-2.0
// socket_util — small socket helpers shared by the socket types.
#pragma once

#include "ringio/net/socket_address.hpp"
#include "ringio/result.hpp"

namespace ringio::detail {

/// getsockname (peer = false) or getpeername (peer = true).
result<socket_address> address_of(int fd, bool peer);

/// TCP_NODELAY; returns 0 or -errno.
int set_nodelay(int fd, bool on) noexcept;

}  // namespace ringio::detail
