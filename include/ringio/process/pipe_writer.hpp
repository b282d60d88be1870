// SPDX-License-Identifier: Apache-2.0
// ringio/process/pipe_writer.hpp — the write end of a pipe as a ringio stream.
#pragma once

#include <cstddef>

#include "ringio/buffer.hpp"
#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/pipe_ops.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::process {

/// The write end of a pipe (a child's standard input, or any pipe adopted with
/// from_descriptor). A write to a pipe whose reader is gone fails with broken_pipe: the
/// first pipe_writer sets SIGPIPE to SIG_IGN if its action is still the default (as
/// send_file does), since a write to a pipe cannot suppress the signal itself.
class pipe_writer {
 public:
  /// No pipe: is_open() is false.
  pipe_writer() noexcept = default;
  /// Takes ownership of `fd`, the write end of a pipe (or a FIFO, ...). The descriptor
  /// may be blocking: writes never block the loop.
  static pipe_writer from_descriptor(int fd) noexcept { return pipe_writer(detail::fd_handle(fd)); }

  /// One write: some of `buf` (at least one byte), or an error such as broken_pipe.
  [[nodiscard]] detail::pipe_write_op write_some(const_buffer buf) noexcept { return {fd_.get(), buf}; }
  /// Writes all of `buf`, in as many writes as the pipe takes; on an error or a stop,
  /// the error (the bytes written before it are gone into the pipe).
  task<result<void>> write_all(const_buffer buf);
  /// Closes the write end: the reader (the child) sees the end of its input.
  [[nodiscard]] detail::close_op close() noexcept;

  /// Whether it holds a descriptor.
  [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
  /// The descriptor (still owned by this object).
  [[nodiscard]] int native_handle() const noexcept { return fd_.get(); }

 private:
  explicit pipe_writer(detail::fd_handle fd) noexcept;
  friend class child;
  detail::fd_handle fd_;
};

}  // namespace ringio::process
