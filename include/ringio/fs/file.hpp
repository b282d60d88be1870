// SPDX-License-Identifier: Apache-2.0
// ringio/fs/file.hpp — a regular file read and written at explicit offsets.
// On io_uring the kernel performs the I/O asynchronously; the readiness backends
// (epoll, uring-poll) cannot wait for regular files, so there pread/pwrite run on the
// loop's blocking pool (a buffered read the page cache holds: on the loop, at once).
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <span>
#include <string>

#include "ringio/buffer.hpp"
#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/file_ops.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/stream_ops.hpp"
#include "ringio/result.hpp"

namespace ringio {
namespace detail {

extern const op_vtable read_at_vtable;
extern const op_vtable write_at_vtable;

/// One pread-like read: up to buf.size() bytes at `offset`; 0 at end of file.
class read_at_op : public io_operation<read_at_op> {
 public:
  read_at_op(int fd_, mutable_buffer b, std::uint64_t off) noexcept
      : io_operation(&read_at_vtable), buf(b.first(max_io_size)), offset(off) {
    fd = fd_;
    want = interest::readable;
  }
  result<std::size_t> get_result() const noexcept { return size_result(*this); }
  mutable_buffer buf;
  std::uint64_t offset;
  offload_slot offload;       ///< its job on the blocking pool (readiness backends)
  bool cached_first = false;  ///< try RWF_NOWAIT on the loop first (not O_DIRECT)
};

/// One pwrite-like write at `offset`; may write fewer bytes than given.
class write_at_op : public io_operation<write_at_op> {
 public:
  write_at_op(int fd_, const_buffer b, std::uint64_t off) noexcept
      : io_operation(&write_at_vtable), buf(b.first(max_io_size)), offset(off) {
    fd = fd_;
    want = interest::writable;
  }
  result<std::size_t> get_result() const noexcept { return size_result(*this); }
  const_buffer buf;
  std::uint64_t offset;
  offload_slot offload;  ///< its job on the blocking pool (readiness backends)
};

}  // namespace detail

/// A regular file. Reads and writes at an offset: asynchronous on io_uring, pread/pwrite
/// on the loop's blocking pool on the readiness backends (files have no readiness).
/// Closes itself when destroyed. ringio::fs has the path operations (an asynchronous
/// open among them) and docs/files.md the whole picture.
class file {
 public:
  file() noexcept = default;
  /// Takes ownership of an open descriptor.
  explicit file(detail::fd_handle fd) noexcept
      : fd_(std::move(fd)), direct_(fd_.valid() && (::fcntl(fd_.get(), F_GETFL) & O_DIRECT) != 0) {}

  /// open(2), synchronously. flags: O_RDONLY, O_WRONLY | O_CREAT | O_TRUNC, ...
  static result<file> open(const std::string& path, int flags = O_RDONLY, int mode = 0644);
  /// Takes ownership of `fd`, a regular file opened by other code. Checked first (fstat):
  /// not open (bad_file_descriptor), a directory (is_a_directory), anything else that
  /// is not a regular file (invalid_argument: pipes and sockets have no offsets); on an
  /// error the descriptor is left as it was and stays the caller's. On success the file
  /// owns it (closes it when destroyed); its flags (O_APPEND, O_NONBLOCK...) are kept.
  static result<file> adopt(int fd);

  /// Reads up to buf.size() bytes at `offset`; 0 means end of file. Errors: what
  /// pread(2) reports; operation_canceled on stop (io_uring; the readiness backends read
  /// synchronously, so a read that started completes).
  [[nodiscard]] detail::read_at_op read_at(mutable_buffer buf, std::uint64_t offset) noexcept {
    detail::read_at_op op(fd_.get(), buf, offset);
    op.cached_first = !direct_;
    return op;
  }
  /// Writes up to buf.size() bytes at `offset` (a short count is possible, as with
  /// pwrite(2)). Errors and cancellation as read_at.
  [[nodiscard]] detail::write_at_op write_at(const_buffer buf, std::uint64_t offset) noexcept {
    return {fd_.get(), buf, offset};
  }
  /// preadv(2): fills the buffers `vecs` describes, in order, from `offset`. The
  /// iovec array and the buffers must outlive the operation. Errors and cancellation as
  /// read_at.
  [[nodiscard]] detail::vector_at_op read_at(std::span<const iovec> vecs, std::uint64_t offset) noexcept {
    detail::vector_at_op op(&detail::readv_at_vtable, fd_.get(), vecs, offset);
    op.cached_first = !direct_;
    return op;
  }
  /// pwritev(2): writes the buffers `vecs` describes, in order, at `offset`; a short
  /// count is possible. Errors and cancellation as read_at.
  [[nodiscard]] detail::vector_at_op write_at(std::span<const iovec> vecs, std::uint64_t offset) noexcept {
    return {&detail::writev_at_vtable, fd_.get(), vecs, offset};
  }
  /// Reads into `buf`, which lies inside buffer `index` registered with
  /// io_context::register_buffers (IORING_OP_READ_FIXED: no page pinning per I/O). On
  /// the readiness backends a plain pread. A buffer outside the registered one fails
  /// with bad_address (io_uring).
  [[nodiscard]] detail::fixed_at_op read_fixed_at(mutable_buffer buf, std::uint64_t offset, unsigned index) noexcept {
    detail::fixed_at_op op(&detail::read_fixed_vtable, fd_.get(), buf, offset, index);
    op.cached_first = !direct_;
    return op;
  }
  /// Writes from `buf` inside registered buffer `index` (IORING_OP_WRITE_FIXED); as
  /// read_fixed_at.
  [[nodiscard]] detail::fixed_at_op write_fixed_at(const_buffer buf, std::uint64_t offset, unsigned index) noexcept {
    return {&detail::write_fixed_vtable, fd_.get(), mutable_buffer(const_cast<std::byte*>(buf.data()), buf.size()),
            offset, index};
  }
  /// fsync(2): data and metadata reach the device.
  [[nodiscard]] detail::file_control_op sync() noexcept { return {&detail::fsync_vtable, fd_.get(), 0, 0, 0}; }
  /// fdatasync(2): data (and the metadata needed to read it) reach the device.
  [[nodiscard]] detail::file_control_op sync_data() noexcept { return {&detail::fsync_vtable, fd_.get(), 1, 0, 0}; }
  /// fallocate(2): `mode` 0 reserves [offset, offset + length) and grows the file;
  /// FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, ... as the man page says.
  [[nodiscard]] detail::file_control_op allocate(std::uint64_t offset, std::uint64_t length, int mode = 0) noexcept {
    return {&detail::fallocate_vtable, fd_.get(), mode, offset, length};
  }
  /// ftruncate(2) to `length` bytes (IORING_OP_FTRUNCATE where the kernel has it).
  [[nodiscard]] detail::file_control_op truncate(std::uint64_t length) noexcept {
    return {&detail::ftruncate_vtable, fd_.get(), 0, 0, length};
  }
  /// statx(2) of the open file: `mask` chooses the fields (STATX_BASIC_STATS,
  /// STATX_DIOALIGN, ...); the result's stx_mask says which the filesystem filled.
  [[nodiscard]] detail::statx_op stat(unsigned mask = STATX_BASIC_STATS) { return {fd_.get(), std::string(), 0, mask}; }
  /// Current size in bytes (fstat).
  [[nodiscard]] result<std::uint64_t> size() const;
  /// Closes the file (asynchronously on io_uring); not cancellable.
  [[nodiscard]] detail::close_op close() noexcept;

  /// Whether it holds a descriptor.
  [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
  /// The descriptor (still owned by the file).
  [[nodiscard]] int native_handle() const noexcept { return fd_.get(); }

 private:
  detail::fd_handle fd_;
  bool direct_ = false;  // opened with O_DIRECT: reads never try RWF_NOWAIT on the loop
};

}  // namespace ringio
