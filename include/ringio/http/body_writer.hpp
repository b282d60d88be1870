// SPDX-License-Identifier: Apache-2.0
// ringio/http/body_writer.hpp — how a streamed response body is written (see
// response::stream). Parts become chunks for HTTP/1.1 clients. write() sends its part
// before it completes, so whatever the stream awaits next (a timer, a channel), the
// client already has everything written so far. write_batched() gathers small parts
// in the connection's send buffer instead, for a stream that writes many small pieces
// in a row; they go out once 16 KiB are gathered, with the next write() or flush(),
// or after the stream ends. The response head goes out with the first part sent (call
// flush() to send it before a long wait).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "ringio/net/stream_socket.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

namespace detail {
class output_buffer;
}
}  // namespace ringio::http

namespace ringio::tls {
class stream;
}

namespace ringio::http {

/// Writes the body of a streamed response (see the top of this file); one per
/// response, made by the server and handed to the body_stream.
class body_writer {
 public:
  /// Made by the server for each streamed response.
  body_writer(stream_socket& socket, detail::output_buffer& out, std::chrono::nanoseconds send_timeout,
              bool chunked) noexcept
      : socket_(&socket), out_(out), timeout_(send_timeout), chunked_(chunked) {}
  /// Made by the server for each streamed response over HTTPS.
  body_writer(tls::stream& secure, detail::output_buffer& out, std::chrono::nanoseconds send_timeout,
              bool chunked) noexcept
      : tls_(&secure), out_(out), timeout_(send_timeout), chunked_(chunked) {}
  /// Moved by the server while no write is in flight.
  body_writer(body_writer&&) noexcept = default;
  body_writer(const body_writer&) = delete;
  body_writer& operator=(const body_writer&) = delete;

  /// Sends `data` as the next part of the body, together with anything gathered
  /// before it; completes once the bytes are handed to the kernel. An empty `data`
  /// only sends what is gathered. Errors: the client went away (broken_pipe,
  /// connection_reset) or read too slowly (timed_out, after the server's send_timeout);
  /// after an error every later call fails with broken_pipe. Obeys the connection's
  /// stop token (operation_canceled; the part may then be partly sent).
  [[nodiscard]] task<result<void>> write(std::string_view data) { return put(data, true); }
  /// Appends `data` as the next part without sending it, unless 16 KiB are gathered
  /// (then everything gathered is sent) or `data` is that large itself (sent directly,
  /// after what was gathered). Gathered parts wait for the next write() or flush(), or
  /// the end of the stream: call one of them before awaiting anything slow. Errors and
  /// cancellation as write().
  [[nodiscard]] task<result<void>> write_batched(std::string_view data) { return put(data, false); }
  /// Sends the gathered parts (and the response head, if not sent yet) now. Errors and
  /// cancellation as write().
  [[nodiscard]] task<result<void>> flush();

  /// Body bytes accepted so far (framing not counted).
  [[nodiscard]] std::uint64_t bytes_written() const noexcept { return written_; }
  /// Whether a write has failed.
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  /// Appends the last-chunk marker (the server calls it after the stream ends and
  /// sends it with its next write).
  void finish();

 private:
  task<result<void>> put(std::string_view data, bool send_now);
  task<result<void>> send_buffered();

  stream_socket* socket_ = nullptr;
  tls::stream* tls_ = nullptr;
  detail::output_buffer& out_;
  std::chrono::nanoseconds timeout_;
  std::uint64_t written_ = 0;
  bool chunked_;
  bool failed_ = false;
};

}  // namespace ringio::http
