// SPDX-License-Identifier: Apache-2.0
// server_limits — the host limits that bound a server, read from rlimits, /proc and /sys.
#pragma once

#include <vector>

#include "ringio/doctor/limit.hpp"

namespace ringio::doctor::detail {

/// RLIMIT_NOFILE, RLIMIT_MEMLOCK, the io_uring sysctls, net.core.somaxconn, tcp_mem and
/// the TCP memory in use, the ephemeral port range, transparent huge pages, the CPUs
/// online, usable by this process and isolated.
std::vector<limit> read_limits();

}  // namespace ringio::doctor::detail
