// SPDX-License-Identifier: Apache-2.0
// ringio/net/inherited_listeners.hpp — listening sockets a process starts with: those of
// systemd-style socket activation (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES).
#pragma once

#include <string>
#include <vector>

#include "ringio/net/stream_listener.hpp"
#include "ringio/result.hpp"

namespace ringio {

/// One listening socket passed in by socket activation.
struct inherited_listener {
  /// Its name from LISTEN_FDNAMES ("unknown" when the variable is not set, as systemd).
  std::string name;
  /// The socket, owned from now on, with FD_CLOEXEC set.
  stream_listener listener;
};

/// The listening sockets of systemd-style socket activation, as sd_listen_fds(3)
/// defines it: LISTEN_PID must be this process's id, LISTEN_FDS counts descriptors
/// starting at 3, LISTEN_FDNAMES (optional) names them, colon-separated. An empty
/// vector when LISTEN_PID is not set or names another process (the sockets were not
/// meant for this one). With `unset_environment` the three variables are removed in
/// every case (success or error), so that child processes do not see them. Not
/// thread-safe (it reads and changes the environment): call it at start-up, before
/// other threads run.
///
/// Errors (no descriptor is then taken over, and none is closed):
/// errc::invalid_listen_fds when LISTEN_PID or LISTEN_FDS is not a positive decimal
/// number, LISTEN_FDS is missing, too large or names descriptors beyond the limit,
/// or LISTEN_FDNAMES has not LISTEN_FDS names (or an empty one); bad_file_descriptor
/// when one of the descriptors is not open; errc::not_a_listener when one is not a
/// listening stream socket (systemd's datagram sockets and FIFOs are not served).
result<std::vector<inherited_listener>> listeners_from_environment(bool unset_environment = true);

}  // namespace ringio
