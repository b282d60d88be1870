// SPDX-License-Identifier: Apache-2.0
// ringio/http/response_stream.hpp — a response whose head has arrived and whose body is
// read piece by piece (http::client::stream_request).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ringio/buffer.hpp"
#include "ringio/http/chunked_reader.hpp"
#include "ringio/http/response_head.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

class client;
/// @cond INTERNAL
namespace detail {
struct client_connection;
struct client_connection_deleter {
  void operator()(client_connection* c) const noexcept;
};
using connection_ptr = std::unique_ptr<client_connection, client_connection_deleter>;
}  // namespace detail
/// @endcond

/// The head of a response and a reader of its body. It holds the connection until the
/// body has been read to its end, then gives it back to the client's pool (when the
/// server allows reuse); destroying it earlier closes the connection. The client must
/// outlive it. Use it on the loop of its client only.
class response_stream {
 public:
  /// An empty stream (no response).
  response_stream() noexcept;
  /// Moves the response (and its connection); `other` becomes empty. Not while a
  /// read() is in flight.
  ///@{
  response_stream(response_stream&& other) noexcept;
  response_stream& operator=(response_stream&& other) noexcept;
  ///@}
  /// Gives the connection back to the client's pool when the body was read to its end
  /// and the server allows reuse; otherwise closes it.
  ~response_stream();

  /// The status code.
  [[nodiscard]] int status() const noexcept { return head_.status; }
  /// The reason phrase (valid while the stream lives).
  [[nodiscard]] std::string_view reason() const noexcept { return head_.reason; }
  /// The fields (views valid while the stream lives).
  [[nodiscard]] const header_list& headers() const noexcept { return head_.headers; }
  /// The value of the first field called `name` (any case); empty if none.
  [[nodiscard]] std::string_view header(std::string_view name) const noexcept { return head_.headers.get(name); }
  /// How the body is delimited.
  [[nodiscard]] body_framing framing() const noexcept { return head_.framing; }
  /// Whether the whole body has been read.
  [[nodiscard]] bool done() const noexcept { return done_; }

  /// Reads the next bytes of the body into `buf` (which must not be empty): the count,
  /// or 0 at the end of the body. Errors: client_errc::body_timeout (nothing arrived for
  /// body_timeout), truncated_body (the connection ended early; over TLS, any end
  /// without close_notify unless client_options::accept_tls_truncation), bad_chunk,
  /// body_too_large (over max_body), and socket errors. Cancellation: a stop completes
  /// it with operation_canceled, or with the bytes that had already arrived (never
  /// lost); after an error or a stop the connection is not reused.
  [[nodiscard]] task<result<std::size_t>> read(mutable_buffer buf);
  /// Reads the rest of the body and appends it to `out`. Errors and cancellation: those
  /// of read(); what was read before an error stays in `out`.
  [[nodiscard]] task<result<void>> read_all(std::string& out);

  /// @cond INTERNAL
  response_stream(client& owner, detail::connection_ptr conn, const response_head& head, std::size_t body_begin);
  /// @endcond

 private:
  /// @cond INTERNAL
  void finish() noexcept;
  void fail() noexcept;
  task<result<std::size_t>> receive(mutable_buffer buf);

  client* owner_ = nullptr;
  detail::connection_ptr conn_;
  response_head head_;
  chunked_reader chunks_;
  std::uint64_t remaining_ = 0;  // content_length framing: bytes still to come
  std::uint64_t received_ = 0;   // body bytes delivered so far
  std::size_t body_begin_ = 0;   // where the body region of the buffer starts
  bool done_ = true;
  /// @endcond
};

}  // namespace ringio::http
