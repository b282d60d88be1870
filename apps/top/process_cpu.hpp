// SPDX-License-Identifier: Apache-2.0
// process_cpu — the CPU time of a local process from /proc, and the process that
// listens on a local TCP port.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace top {

/// The process that holds the socket listening on TCP `port` (IPv4 or IPv6), when it
/// is one this user may look into; nullopt otherwise.
std::optional<pid_t> find_listener(std::uint16_t port);

/// User plus system CPU time of process `pid`, in seconds (/proc/PID/stat).
std::optional<double> process_cpu_seconds(pid_t pid);

}  // namespace top
