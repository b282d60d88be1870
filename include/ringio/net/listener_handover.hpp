// SPDX-License-Identifier: Apache-2.0
// ringio/net/listener_handover.hpp — passing listening sockets to another process over
// a connected Unix stream socket (SCM_RIGHTS), for restarts that refuse no connection:
// both processes then hold the same sockets, whose backlog the kernel keeps.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

#include "ringio/net/stream_listener.hpp"
#include "ringio/result.hpp"

namespace ringio {

/// The most listeners one handover message carries.
inline constexpr std::size_t max_handover_listeners = 64;

/// Sends `listeners` (descriptors of listening sockets, which stay open here) over
/// `unix_socket`, a connected AF_UNIX stream socket, as one message: a 16-byte header
/// (magic, version, count) with the descriptors attached. Blocking, up to `timeout`:
/// call it outside loop threads. Errors: std::errc::invalid_argument for no listener
/// or more than max_handover_listeners, errc::not_a_listener when one is not a
/// listening stream socket, std::errc::timed_out, and sendmsg's errors
/// (broken_pipe when the peer has gone).
result<void> send_listeners(int unix_socket, std::span<const int> listeners,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// Receives the message send_listeners sends, on `unix_socket`, and adopts each
/// descriptor (stream_listener::adopt: FD_CLOEXEC set, owned by the result). Blocking,
/// up to `timeout`. Errors: std::errc::timed_out; errc::end_of_stream when the peer
/// closed first; errc::invalid_handover for a short or unknown header, a version or
/// count this side does not know, or descriptors missing, extra or truncated
/// (MSG_CTRUNC); errc::not_a_listener when one is not a listening stream socket;
/// recvmsg's errors. On any error every descriptor received is closed.
result<std::vector<stream_listener>> receive_listeners(int unix_socket,
                                                       std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace ringio
