// SPDX-License-Identifier: Apache-2.0
// ringio/detail/file_ops.hpp — file and directory operations beyond read_at/write_at:
// open, statx, fsync, fallocate, ftruncate, vectored and fixed-buffer I/O at offsets,
// and the path operations (rename, unlink, mkdir, link, symlink). On io_uring each is
// its native opcode (gated by the kernel's probe); on the readiness backends, and where
// the probe lacks the opcode, attempt() makes the syscall on the loop's blocking pool
// (the job embedded in the operation: offload_slot); on sim, on the loop's thread.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>

#include "ringio/buffer.hpp"
#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/offload_job.hpp"
#include "ringio/detail/stream_ops.hpp"
#include "ringio/result.hpp"

namespace ringio {
class file;

namespace detail {

extern const op_vtable open_vtable;
extern const op_vtable statx_vtable;
extern const op_vtable fsync_vtable;
extern const op_vtable fallocate_vtable;
extern const op_vtable ftruncate_vtable;
extern const op_vtable readv_at_vtable;
extern const op_vtable writev_at_vtable;
extern const op_vtable read_fixed_vtable;
extern const op_vtable write_fixed_vtable;
extern const op_vtable rename_vtable;
extern const op_vtable unlink_vtable;
extern const op_vtable mkdir_vtable;
extern const op_vtable link_vtable;
extern const op_vtable symlink_vtable;

/// A buffered read that the page cache answers whole (preadv2 with RWF_NOWAIT): its
/// byte count, or -EAGAIN when the read would block, is short of the buffers other than
/// at the end of the file (the rest may need the disk) or fails. The operation then runs
/// on the pool as usual. Not for O_DIRECT files (their reads wait for the device even
/// with RWF_NOWAIT): `file` remembers which it is and sets cached_first.
int read_nowait(int fd, const iovec* vecs, std::size_t count, std::uint64_t offset) noexcept;

/// The kernel's struct open_how (openat2(2)), laid out as linux/openat2.h has it.
struct open_how_args {
  std::uint64_t flags = 0;
  std::uint64_t mode = 0;
  std::uint64_t resolve = 0;
};

/// openat2(2): the result is the opened file.
class open_op : public io_operation<open_op> {
 public:
  open_op(int dirfd_, std::string path_, int flags, unsigned mode, std::uint64_t resolve)
      : io_operation(&open_vtable), dirfd(dirfd_), path(std::move(path_)) {
    how.flags = static_cast<std::uint64_t>(static_cast<unsigned>(flags | O_CLOEXEC));
    // openat2 refuses a mode without O_CREAT or O_TMPFILE.
    how.mode = (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0;
    how.resolve = resolve;
  }
  result<file> get_result() noexcept;

  int dirfd;
  std::string path;
  open_how_args how;
  offload_slot offload;  ///< its job on the blocking pool (readiness backends)
};

/// statx(2) of a path, or of the descriptor `dirfd` itself when path is empty.
class statx_op : public io_operation<statx_op> {
 public:
  statx_op(int dirfd_, std::string path_, int flags_, unsigned mask_)
      : io_operation(&statx_vtable), dirfd(dirfd_), path(std::move(path_)), flags(flags_), mask(mask_) {
    if (path.empty()) flags |= AT_EMPTY_PATH;
  }
  result<struct statx> get_result() const noexcept {
    if (res < 0) return unexpected(op_error(*this));
    return out;
  }

  int dirfd;
  std::string path;
  int flags;
  unsigned mask;
  struct statx out {};
  offload_slot offload;  ///< its job on the blocking pool (readiness backends)
};

/// An operation on an open descriptor with no result but success: fsync (`mode` 1 for
/// fdatasync), fallocate (mode, offset, length), ftruncate (length).
class file_control_op : public io_operation<file_control_op> {
 public:
  file_control_op(const op_vtable* vt, int fd_, int mode_, std::uint64_t offset_, std::uint64_t length_) noexcept
      : io_operation(vt), mode(mode_), offset(offset_), length(length_) {
    fd = fd_;
  }
  result<void> get_result() const noexcept { return void_result(*this); }

  int mode;
  std::uint64_t offset;
  std::uint64_t length;
  offload_slot offload;  ///< its job on the blocking pool (readiness backends)
};

/// preadv(2)/pwritev(2): the result is the byte count (short counts are possible).
class vector_at_op : public io_operation<vector_at_op> {
 public:
  vector_at_op(const op_vtable* vt, int fd_, std::span<const iovec> v, std::uint64_t off) noexcept
      : io_operation(vt), vecs(v), offset(off) {
    fd = fd_;
  }
  result<std::size_t> get_result() const noexcept { return size_result(*this); }

  std::span<const iovec> vecs;
  std::uint64_t offset;
  offload_slot offload;       ///< its job on the blocking pool (readiness backends)
  bool cached_first = false;  ///< a read: try RWF_NOWAIT on the loop first (not O_DIRECT)
};

/// A read or write at an offset into a buffer registered with the ring
/// (IORING_OP_READ_FIXED/WRITE_FIXED); a plain pread/pwrite on the other backends.
class fixed_at_op : public io_operation<fixed_at_op> {
 public:
  fixed_at_op(const op_vtable* vt, int fd_, mutable_buffer b, std::uint64_t off, unsigned index) noexcept
      : io_operation(vt), buf(b.first(max_io_size)), offset(off), buf_index(index) {
    fd = fd_;
  }
  result<std::size_t> get_result() const noexcept { return size_result(*this); }

  mutable_buffer buf;
  std::uint64_t offset;
  unsigned buf_index;
  offload_slot offload;       ///< its job on the blocking pool (readiness backends)
  bool cached_first = false;  ///< a read: try RWF_NOWAIT on the loop first (not O_DIRECT)
};

/// A path operation with no result but success: rename, unlink/rmdir, mkdir, link,
/// symlink. `from` and `to` are its one or two paths (symlink: from is the target).
class path_op : public io_operation<path_op> {
 public:
  path_op(const op_vtable* vt, std::string from_, std::string to_, int flags_, unsigned mode_)
      : io_operation(vt), from(std::move(from_)), to(std::move(to_)), flags(flags_), mode(mode_) {}
  result<void> get_result() const noexcept { return void_result(*this); }

  std::string from;
  std::string to;
  int flags;
  unsigned mode;
  offload_slot offload;  ///< its job on the blocking pool (readiness backends)
};

}  // namespace detail
}  // namespace ringio
