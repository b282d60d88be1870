// ringio/http/body_writer.hpp — how a streamed response body is written (see
// response::stream). Parts become chunks for HTTP/1.1 clients; small parts are
// gathered and sent together, large ones go out directly.
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

class body_writer {
 public:
  /// Made by the server for each streamed response.
  body_writer(stream_socket& socket, detail::output_buffer& out, std::chrono::nanoseconds send_timeout,
              bool chunked) noexcept
      : socket_(socket), out_(out), timeout_(send_timeout), chunked_(chunked) {}
  body_writer(const body_writer&) = delete;
  body_writer& operator=(const body_writer&) = delete;

  /// Sends `data` as the next part of the body. Errors: the client went away
  /// (broken_pipe, connection_reset) or read too slowly (timed_out); after an error
  /// stop writing. Obeys the connection's stop token.
  [[nodiscard]] task<result<void>> write(std::string_view data);
  /// Sends the gathered parts now (e.g. before a long wait).
  [[nodiscard]] task<result<void>> flush();

  /// Body bytes accepted so far (framing not counted).
  [[nodiscard]] std::uint64_t bytes_written() const noexcept { return written_; }
  /// Whether a write has failed.
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  /// Appends the last-chunk marker (the server calls it after the stream ends).
  void finish();

 private:
  task<result<void>> send_buffered();

  stream_socket& socket_;
  detail::output_buffer& out_;
  std::chrono::nanoseconds timeout_;
  std::uint64_t written_ = 0;
  bool chunked_;
  bool failed_ = false;
};

}  // namespace ringio::http
