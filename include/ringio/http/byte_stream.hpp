// SPDX-License-Identifier: Apache-2.0
// ringio/http/byte_stream.hpp — what the HTTP client needs of a connection: the
// members stream_socket has (and tls::stream is to have).
#pragma once

#include <concepts>

#include "ringio/buffer.hpp"

namespace ringio::http {

/// A connected byte stream: recv into a mutable_buffer, send_all of a const_buffer,
/// shutdown and close, each awaitable.
template <class S>
concept byte_stream = requires(S& s, mutable_buffer in, const_buffer out) {
  s.recv(in);
  s.send_all(out);
  s.shutdown();
  s.close();
};

}  // namespace ringio::http
