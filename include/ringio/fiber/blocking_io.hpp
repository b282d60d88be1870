// SPDX-License-Identifier: Apache-2.0
// ringio/fiber/blocking_io.hpp — blocking-style I/O for code running in a fiber: each
// call is `this_fiber::await(op)` under a name that reads like the POSIX call it stands
// for, so ported thread-per-connection code keeps its shape.
#pragma once

#include <cstdint>
#include <span>

#include "ringio/buffer.hpp"
#include "ringio/fiber/this_fiber.hpp"
#include "ringio/fs/file.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/result.hpp"

namespace ringio::this_fiber {

/// Waits for a connection on `l` and returns its socket. Errors as
/// stream_listener::accept(); operation_canceled when the fiber is stopped first.
/// Throws std::logic_error outside a fiber.
inline result<stream_socket> accept(stream_listener& l) { return await(l.accept()); }

/// Connects to `to`. Errors as stream_socket::connect() (ECONNREFUSED, ...);
/// operation_canceled when the fiber is stopped first.
inline result<stream_socket> connect(const socket_address& to) { return await(stream_socket::connect(to)); }

/// Receives up to `buf.size()` bytes; 0 is the end of the stream. Errors as
/// stream_socket::recv(); a stop that loses the race returns the bytes received.
inline result<std::size_t> recv(stream_socket& s, mutable_buffer buf) { return await(s.recv(buf)); }

/// Fills `buf` completely unless the stream ends first (a short count). Errors and
/// cancellation as stream_socket::recv_exact().
inline result<std::size_t> recv_exact(stream_socket& s, mutable_buffer buf) { return await(s.recv_exact(buf)); }

/// Sends some of `buf` (one send(2)); returns how much. Errors as stream_socket::send().
inline result<std::size_t> send(stream_socket& s, const_buffer buf) { return await(s.send(buf)); }

/// Sends all of `buf` unless an error or a stop comes first; returns the bytes sent.
inline result<std::size_t> send_all(stream_socket& s, const_buffer buf) { return await(s.send_all(buf)); }

/// Reads up to `buf.size()` bytes of `f` at `offset` (0 at the end of the file). Errors
/// as file::read_at(); operation_canceled when the fiber is stopped first.
inline result<std::size_t> read_at(file& f, mutable_buffer buf, std::uint64_t offset) {
  return await(f.read_at(buf, offset));
}

/// Writes `buf` to `f` at `offset`; returns the bytes written. Errors as file::write_at().
inline result<std::size_t> write_at(file& f, const_buffer buf, std::uint64_t offset) {
  return await(f.write_at(buf, offset));
}

}  // namespace ringio::this_fiber
