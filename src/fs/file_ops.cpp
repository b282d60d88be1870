// SPDX-License-Identifier: Apache-2.0
// The two faces of every file operation: prepare() fills the io_uring SQE, attempt()
// makes the syscall: on a thread of the loop's blocking pool (readiness backends, and
// io_uring when the probe lacks the opcode), on the loop's thread on sim.
#include "ringio/detail/file_ops.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include "backend/uring/uring_compat.hpp"
#include "ringio/fs/file.hpp"

namespace ringio {
namespace detail {
namespace {

static_assert(sizeof(open_how_args) == sizeof(open_how));

// One byte at `offset` without blocking: 0 at the end of the file.
ssize_t pread2_probe(int fd, char* byte, std::uint64_t offset) noexcept {
  iovec v{byte, 1};
  return ::preadv2(fd, &v, 1, static_cast<off_t>(offset), RWF_NOWAIT);
}

int as_result(long r) noexcept { return r >= 0 ? static_cast<int>(r) : -errno; }
template <class Op>
Op& as(op_base& b) noexcept {
  return static_cast<Op&>(b);
}
constexpr auto opcode(int op) noexcept { return static_cast<std::uint8_t>(op); }

// ---- open ----
void open_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<open_op>(b);
  io_uring_prep_openat2(&sqe, op.dirfd, op.path.c_str(), reinterpret_cast<open_how*>(&op.how));
}
int open_attempt(op_base& b) noexcept {
  auto& op = as<open_op>(b);
  long r = ::syscall(SYS_openat2, op.dirfd, op.path.c_str(), &op.how, sizeof op.how);
  if (r < 0 && errno == ENOSYS && op.how.resolve == 0)  // a kernel before 5.6
    r = ::openat(op.dirfd, op.path.c_str(), static_cast<int>(op.how.flags), static_cast<mode_t>(op.how.mode));
  return as_result(r);
}

// ---- statx ----
void statx_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<statx_op>(b);
  io_uring_prep_statx(&sqe, op.dirfd, op.path.c_str(), op.flags, op.mask, &op.out);
}
int statx_attempt(op_base& b) noexcept {
  auto& op = as<statx_op>(b);
  return as_result(::statx(op.dirfd, op.path.c_str(), op.flags, op.mask, &op.out));
}

// ---- fsync, fallocate, ftruncate ----
void fsync_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<file_control_op>(b);
  io_uring_prep_fsync(&sqe, op.fd, op.mode != 0 ? IORING_FSYNC_DATASYNC : 0);
}
int fsync_attempt(op_base& b) noexcept {
  auto& op = as<file_control_op>(b);
  return as_result(op.mode != 0 ? ::fdatasync(op.fd) : ::fsync(op.fd));
}
void fallocate_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<file_control_op>(b);
  io_uring_prep_fallocate(&sqe, op.fd, op.mode, op.offset, op.length);
}
int fallocate_attempt(op_base& b) noexcept {
  auto& op = as<file_control_op>(b);
  return as_result(::fallocate(op.fd, op.mode, static_cast<off_t>(op.offset), static_cast<off_t>(op.length)));
}
void ftruncate_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<file_control_op>(b);
  io_uring_prep_rw(op_ftruncate, &sqe, op.fd, nullptr, 0, op.length);
}
int ftruncate_attempt(op_base& b) noexcept {
  auto& op = as<file_control_op>(b);
  return as_result(::ftruncate(op.fd, static_cast<off_t>(op.length)));
}

// ---- vectored and fixed-buffer I/O ----
void readv_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<vector_at_op>(b);
  io_uring_prep_readv(&sqe, op.fd, op.vecs.data(), static_cast<unsigned>(op.vecs.size()), op.offset);
}
int readv_attempt(op_base& b) noexcept {
  auto& op = as<vector_at_op>(b);
  return as_result(::preadv(op.fd, op.vecs.data(), static_cast<int>(op.vecs.size()), static_cast<off_t>(op.offset)));
}
void writev_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<vector_at_op>(b);
  io_uring_prep_writev(&sqe, op.fd, op.vecs.data(), static_cast<unsigned>(op.vecs.size()), op.offset);
}
int writev_attempt(op_base& b) noexcept {
  auto& op = as<vector_at_op>(b);
  return as_result(::pwritev(op.fd, op.vecs.data(), static_cast<int>(op.vecs.size()), static_cast<off_t>(op.offset)));
}
void read_fixed_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<fixed_at_op>(b);
  io_uring_prep_read_fixed(&sqe, op.fd, op.buf.data(), static_cast<unsigned>(op.buf.size()), op.offset,
                           static_cast<int>(op.buf_index));
}
int read_fixed_attempt(op_base& b) noexcept {
  auto& op = as<fixed_at_op>(b);
  return as_result(::pread(op.fd, op.buf.data(), op.buf.size(), static_cast<off_t>(op.offset)));
}
void write_fixed_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<fixed_at_op>(b);
  io_uring_prep_write_fixed(&sqe, op.fd, op.buf.data(), static_cast<unsigned>(op.buf.size()), op.offset,
                            static_cast<int>(op.buf_index));
}
int write_fixed_attempt(op_base& b) noexcept {
  auto& op = as<fixed_at_op>(b);
  return as_result(::pwrite(op.fd, op.buf.data(), op.buf.size(), static_cast<off_t>(op.offset)));
}

// ---- paths ----
void rename_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<path_op>(b);
  io_uring_prep_renameat(&sqe, AT_FDCWD, op.from.c_str(), AT_FDCWD, op.to.c_str(), static_cast<unsigned>(op.flags));
}
int rename_attempt(op_base& b) noexcept {
  auto& op = as<path_op>(b);
  return as_result(::renameat2(AT_FDCWD, op.from.c_str(), AT_FDCWD, op.to.c_str(), static_cast<unsigned>(op.flags)));
}
void unlink_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<path_op>(b);
  io_uring_prep_unlinkat(&sqe, AT_FDCWD, op.from.c_str(), op.flags);
}
int unlink_attempt(op_base& b) noexcept {
  auto& op = as<path_op>(b);
  return as_result(::unlinkat(AT_FDCWD, op.from.c_str(), op.flags));
}
void mkdir_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<path_op>(b);
  io_uring_prep_mkdirat(&sqe, AT_FDCWD, op.from.c_str(), op.mode);
}
int mkdir_attempt(op_base& b) noexcept {
  auto& op = as<path_op>(b);
  return as_result(::mkdirat(AT_FDCWD, op.from.c_str(), op.mode));
}
void link_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<path_op>(b);
  io_uring_prep_linkat(&sqe, AT_FDCWD, op.from.c_str(), AT_FDCWD, op.to.c_str(), op.flags);
}
int link_attempt(op_base& b) noexcept {
  auto& op = as<path_op>(b);
  return as_result(::linkat(AT_FDCWD, op.from.c_str(), AT_FDCWD, op.to.c_str(), op.flags));
}
void symlink_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = as<path_op>(b);
  io_uring_prep_symlinkat(&sqe, op.from.c_str(), AT_FDCWD, op.to.c_str());
}
int symlink_attempt(op_base& b) noexcept {
  auto& op = as<path_op>(b);
  return as_result(::symlinkat(op.from.c_str(), AT_FDCWD, op.to.c_str()));
}

int readv_nowait(op_base& b) noexcept {
  auto& op = as<vector_at_op>(b);
  if (!op.cached_first) return -EAGAIN;
  return read_nowait(op.fd, op.vecs.data(), op.vecs.size(), op.offset);
}
int read_fixed_nowait(op_base& b) noexcept {
  auto& op = as<fixed_at_op>(b);
  if (!op.cached_first) return -EAGAIN;
  iovec v{op.buf.data(), op.buf.size()};
  return read_nowait(op.fd, &v, 1, op.offset);
}

template <class Op>
constexpr op_vtable single(void (*prepare)(op_base&, io_uring_sqe&) noexcept, int (*attempt)(op_base&) noexcept,
                           int uring_op, int (*nowait)(op_base&) noexcept = nullptr) noexcept {
  return {.prepare = prepare,
          .attempt = attempt,
          .on_cqe = nullptr,
          .step = nullptr,
          .complete = resume_waiter,
          .optional_opcode = opcode(uring_op),
          .offload = offload_of<Op>,
          .attempt_nowait = nowait};
}

}  // namespace

const op_vtable open_vtable = single<open_op>(open_prepare, open_attempt, IORING_OP_OPENAT2);
const op_vtable statx_vtable = single<statx_op>(statx_prepare, statx_attempt, IORING_OP_STATX);
const op_vtable fsync_vtable = single<file_control_op>(fsync_prepare, fsync_attempt, IORING_OP_FSYNC);
const op_vtable fallocate_vtable = single<file_control_op>(fallocate_prepare, fallocate_attempt, IORING_OP_FALLOCATE);
const op_vtable ftruncate_vtable = single<file_control_op>(ftruncate_prepare, ftruncate_attempt, op_ftruncate);
const op_vtable readv_at_vtable = single<vector_at_op>(readv_prepare, readv_attempt, IORING_OP_READV, readv_nowait);
const op_vtable writev_at_vtable = single<vector_at_op>(writev_prepare, writev_attempt, IORING_OP_WRITEV);
const op_vtable read_fixed_vtable =
    single<fixed_at_op>(read_fixed_prepare, read_fixed_attempt, IORING_OP_READ_FIXED, read_fixed_nowait);
const op_vtable write_fixed_vtable =
    single<fixed_at_op>(write_fixed_prepare, write_fixed_attempt, IORING_OP_WRITE_FIXED);
const op_vtable rename_vtable = single<path_op>(rename_prepare, rename_attempt, IORING_OP_RENAMEAT);
const op_vtable unlink_vtable = single<path_op>(unlink_prepare, unlink_attempt, IORING_OP_UNLINKAT);
const op_vtable mkdir_vtable = single<path_op>(mkdir_prepare, mkdir_attempt, IORING_OP_MKDIRAT);
const op_vtable link_vtable = single<path_op>(link_prepare, link_attempt, IORING_OP_LINKAT);
const op_vtable symlink_vtable = single<path_op>(symlink_prepare, symlink_attempt, IORING_OP_SYMLINKAT);

int read_nowait(int fd, const iovec* vecs, std::size_t count, std::uint64_t offset) noexcept {
  std::size_t want = 0;
  for (std::size_t i = 0; i < count; ++i) want += vecs[i].iov_len;
  ssize_t r = ::preadv2(fd, vecs, static_cast<int>(count), static_cast<off_t>(offset), RWF_NOWAIT);
  // 0 is the end of the file (RWF_NOWAIT answers EAGAIN, not 0, for a page not cached).
  if (r < 0) return -EAGAIN;
  if (r != 0 && static_cast<std::size_t>(r) != want) {
    // Short: the end of the file (a one-byte probe past it reads 0), or a part cached.
    char probe = 0;
    if (pread2_probe(fd, &probe, offset + static_cast<std::uint64_t>(r)) != 0) return -EAGAIN;
  }
  return static_cast<int>(r);
}

result<file> open_op::get_result() noexcept {
  if (res < 0) return unexpected(op_error(*this));
  return file(fd_handle(res));
}

}  // namespace detail
}  // namespace ringio
