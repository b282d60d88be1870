// SPDX-License-Identifier: Apache-2.0
// ringio/tls/recv_wait.hpp — how tls::stream::recv waits for its peer when it has
// nothing buffered.
#pragma once

#include <cstdint>

namespace ringio::tls {

/// How a tls::stream receive waits for the socket while nothing is buffered.
enum class recv_wait : std::uint8_t {
  /// A one-byte peek (`MSG_PEEK`) waits first, and the record buffer is borrowed only
  /// once data is there: a connection waiting this way for a silent peer holds no
  /// buffer, at the cost of one more syscall per receive.
  without_buffer,
  /// The receive goes straight into a borrowed record buffer: one syscall less, for a
  /// caller that expects the peer to send now (the rest of a request it is reading).
  with_buffer,
};

}  // namespace ringio::tls
