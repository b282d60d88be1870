// SPDX-License-Identifier: Apache-2.0
// ringio/http/response.hpp — what a handler returns: a status, a Content-Type, extra
// header fields, and a body that is fixed (owned or borrowed text), a file, or a stream
// written chunk by chunk. The server adds Content-Length or Transfer-Encoding, Date
// and Connection, and leaves the body out for HEAD, 204 and 304.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>

#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/shared_fd.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

class body_writer;
struct upgraded_connection;
namespace detail {
class connection;
struct response_parts;
}  // namespace detail

/// Writes a streamed body; runs after the head is sent. An exception escaping it
/// aborts the connection (the client sees a truncated body).
using body_stream = std::function<task<void>(body_writer&)>;

/// Runs a connection after "101 Switching Protocols" (see response::upgrade). When it
/// returns, the server closes the connection.
using upgrade_handler = std::function<task<void>(upgraded_connection&)>;

/// An open file whose bytes [offset, offset + length) are the body.
struct file_body {
  /// The open file (closed when the response is done).
  ringio::detail::fd_handle fd;
  /// The first byte of the body in the file.
  std::uint64_t offset = 0;
  /// The body's length.
  std::uint64_t length = 0;
  /// Used when `fd` is empty: a file that others on this loop keep open too (the
  /// open-file cache of static_files), held until the response is done. Such a
  /// response must be sent on the loop that made it.
  ringio::detail::shared_fd shared{};

  /// The descriptor to read: `fd`, else `shared`'s.
  [[nodiscard]] int descriptor() const noexcept { return fd.valid() ? fd.get() : shared.get(); }
};

/// What a handler returns: a status, header fields and a body (none, owned text,
/// borrowed bytes, a stream or a file).
class response {
 public:
  /// A response with `status` and an empty body.
  explicit response(int status = 200) noexcept : status_(status) {}

  /// An owned body (short texts fit the string's inline storage: no allocation).
  static response text(int status, std::string body, std::string_view content_type = "text/plain");
  /// An owned JSON body ("application/json"), e.g. the text of a json_writer.
  static response json(int status, std::string body) { return text(status, std::move(body), "application/json"); }
  /// A borrowed body: `body` must stay valid until the response is sent (string
  /// literals and other static data).
  static response borrowed(int status, std::string_view body, std::string_view content_type = "text/plain");
  /// A body produced by `fn` while it is sent: chunked for HTTP/1.1 clients; for
  /// HTTP/1.0 clients the end of the body is the end of the connection.
  static response stream(int status, std::string_view content_type, body_stream fn);
  /// A file's bytes: over 16 KiB sent by the kernel with sendfile(2) (see
  /// server_options::sendfile), smaller ones read through the loop.
  static response file(int status, file_body f, std::string_view content_type);
  /// "101 Switching Protocols": the server sends the head (with the fields added by
  /// set_header, such as Upgrade), then hands the connection to `fn` and closes it when
  /// `fn` returns. Only for HTTP/1.1 requests. An exception escaping `fn` is logged.
  static response upgrade(upgrade_handler fn);

  /// Adds a header field. Throws std::invalid_argument for a name that is not a token
  /// or a value with CR, LF or other control characters (no header injection).
  response& set_header(std::string_view name, std::string_view value);
  /// Replaces the Content-Type (validated as set_header).
  response& set_content_type(std::string_view content_type);
  /// Closes the connection after this response ("Connection: close").
  response& close_connection() noexcept {
    close_ = true;
    return *this;
  }

  /// The status code.
  [[nodiscard]] int status() const noexcept { return status_; }
  /// The Content-Type value (empty: none is sent).
  [[nodiscard]] std::string_view content_type() const noexcept {
    return content_type_.empty() ? borrowed_content_type_ : std::string_view(content_type_);
  }
  /// The added fields, each as "Name: value\r\n".
  [[nodiscard]] std::string_view extra_headers() const noexcept {
    return fields_.empty() ? borrowed_fields_ : std::string_view(fields_);
  }
  /// Whether close_connection() was called.
  [[nodiscard]] bool closes_connection() const noexcept { return close_; }
  /// The fixed body (empty for stream and file bodies).
  [[nodiscard]] std::string_view body() const noexcept;
  /// Whether the body is a stream.
  [[nodiscard]] bool is_stream() const noexcept { return std::holds_alternative<body_stream>(body_); }
  /// Whether the response hands the connection over (response::upgrade).
  [[nodiscard]] bool is_upgrade() const noexcept { return std::holds_alternative<upgrade_handler>(body_); }
  /// Whether the body is a file.
  [[nodiscard]] bool is_file() const noexcept { return std::holds_alternative<file_body>(body_); }

 private:
  friend class detail::connection;
  friend struct detail::response_parts;
  int status_;
  bool close_ = false;
  std::string content_type_;
  std::string fields_;
  // Text that outlives the response (static, or kept by the body's owner): used while
  // content_type_ and fields_ are empty, copied into them before any change.
  std::string_view borrowed_content_type_{};
  std::string_view borrowed_fields_{};
  std::variant<std::monostate, std::string, std::string_view, file_body, body_stream, upgrade_handler> body_;
};

}  // namespace ringio::http
