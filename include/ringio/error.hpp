// SPDX-License-Identifier: Apache-2.0
// ringio/error.hpp — error codes of ringio's own, and the one place negative errno
// values become std::error_code.
#pragma once

#include <system_error>

namespace ringio {

/// Errors ringio reports that no errno describes.
enum class errc {
  invalid_address = 1,    ///< text could not be parsed as a socket address
  invalid_port,           ///< port missing, not a number, or above 65535
  address_too_long,       ///< Unix socket path longer than sun_path
  backend_unavailable,    ///< the requested backend cannot start on this host
  unsupported_operation,  ///< the backend cannot perform this operation
  no_current_context,     ///< an operation was started outside a running io_context
  message_too_long,       ///< a delimited or counted message does not fit the limit or buffer
  end_of_stream,          ///< the peer closed its side before a whole message arrived
  closed,                 ///< the channel or broadcast was closed (and, for receivers, drained)
  lagged,                 ///< a broadcast receiver fell behind and missed values
  queue_full,             ///< a bounded queue (a blocking_pool's) had no room
  not_a_listener,         ///< the descriptor is not a listening stream socket
  invalid_listen_fds,     ///< LISTEN_PID, LISTEN_FDS or LISTEN_FDNAMES is malformed
  invalid_handover,       ///< a listener handover message is malformed
};

/// The category of ringio::errc values ("ringio").
const std::error_category& ringio_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), ringio_category()}; }

/// Converts a negative errno (as io_uring and raw syscalls report it) to an error_code.
/// Comparisons against std::errc work: `ec == std::errc::connection_refused`.
inline std::error_code errno_code(int negative_errno) noexcept { return {-negative_errno, std::system_category()}; }

}  // namespace ringio

template <>
struct std::is_error_code_enum<ringio::errc> : std::true_type {};
