// SPDX-License-Identifier: Apache-2.0
// client_connection — one connection of http::client: its socket, the origin it is
// for, and the receive buffer that response heads are parsed in (allocated once per
// connection, reused by every request on it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ringio/http/response_stream.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/task.hpp"
#include "ringio/tls/stream.hpp"

namespace ringio::http::detail {

struct client_connection {
  client_connection(bool is_tls, std::string_view h, std::uint16_t p, std::size_t buffer_size)
      : tls(is_tls), host(h), port(p), buffer(new char[buffer_size]), capacity(buffer_size) {}

  bool tls;
  std::string host;
  std::uint16_t port;
  stream_socket socket;               // plain http
  std::optional<tls::stream> secure;  // https: owns the socket instead
  std::unique_ptr<char[]> buffer;
  std::size_t capacity;
  std::size_t begin = 0;  // unread received bytes are [begin, end)
  std::size_t end = 0;
  std::string out;  // the serialized request head (capacity kept between requests)
  std::int64_t idle_since_ns = 0;
};

// Receives some bytes before `deadline_ns` (CLOCK_MONOTONIC; the errors of the stream,
// timed_out at the deadline).
task<result<std::size_t>> receive_some(client_connection& c, mutable_buffer b, std::int64_t deadline_ns);
// Sends every part (at most 4) in order before `deadline_ns`: the total, or the error
// that stopped it, even after some bytes went (timed_out at the deadline,
// operation_canceled on a stop, the socket's or the stream's error).
task<result<std::size_t>> send_parts(client_connection& c, std::span<const const_buffer> parts,
                                     std::int64_t deadline_ns);

}  // namespace ringio::http::detail
