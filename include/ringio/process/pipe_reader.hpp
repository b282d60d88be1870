// SPDX-License-Identifier: Apache-2.0
// ringio/process/pipe_reader.hpp — the read end of a pipe as a ringio stream.
#pragma once

#include <cstddef>
#include <string>

#include "ringio/buffer.hpp"
#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/pipe_ops.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::process {

/// The read end of a pipe (a child's standard output or error, or any pipe adopted with
/// from_descriptor). Reads are cancellable like socket receives; closes itself when
/// destroyed.
class pipe_reader {
 public:
  /// No pipe: is_open() is false.
  pipe_reader() noexcept = default;
  /// Takes ownership of `fd`, the read end of a pipe (or a FIFO, a terminal, ...). The
  /// descriptor may be blocking: reads never block the loop.
  static pipe_reader from_descriptor(int fd) noexcept { return pipe_reader(detail::fd_handle(fd)); }

  /// Reads up to buf.size() bytes: at least one, or 0 once every writer closed its end.
  [[nodiscard]] detail::pipe_read_op read_some(mutable_buffer buf) noexcept { return {fd_.get(), buf}; }
  /// Reads until the end of the stream and returns everything; message_too_long (with
  /// nothing lost from the pipe's point of view: the rest stays unread) past `max_bytes`.
  task<result<std::string>> read_to_end(std::size_t max_bytes = 16 * 1024 * 1024);
  /// Closes the read end; a child writing to it then gets EPIPE.
  [[nodiscard]] detail::close_op close() noexcept;

  /// Whether it holds a descriptor.
  [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
  /// The descriptor (still owned by this object).
  [[nodiscard]] int native_handle() const noexcept { return fd_.get(); }

 private:
  explicit pipe_reader(detail::fd_handle fd) noexcept : fd_(std::move(fd)) {}
  friend class child;
  detail::fd_handle fd_;
};

}  // namespace ringio::process
