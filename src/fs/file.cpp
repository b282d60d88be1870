// SPDX-License-Identifier: Apache-2.0
#include "ringio/fs/file.hpp"

#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "ringio/detail/fd_generation.hpp"

namespace ringio {
namespace detail {
namespace {

void read_at_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<read_at_op&>(b);
  io_uring_prep_read(&sqe, op.fd, op.buf.data(), static_cast<unsigned>(op.buf.size()), op.offset);
}
int read_at_attempt(op_base& b) noexcept {
  auto& op = static_cast<read_at_op&>(b);
  ssize_t r = ::pread(op.fd, op.buf.data(), op.buf.size(), static_cast<off_t>(op.offset));
  return r >= 0 ? static_cast<int>(r) : -errno;
}
int read_at_nowait(op_base& b) noexcept {
  auto& op = static_cast<read_at_op&>(b);
  if (!op.cached_first) return -EAGAIN;
  iovec v{op.buf.data(), op.buf.size()};
  return read_nowait(op.fd, &v, 1, op.offset);
}
void write_at_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<write_at_op&>(b);
  io_uring_prep_write(&sqe, op.fd, op.buf.data(), static_cast<unsigned>(op.buf.size()), op.offset);
}
int write_at_attempt(op_base& b) noexcept {
  auto& op = static_cast<write_at_op&>(b);
  ssize_t r = ::pwrite(op.fd, op.buf.data(), op.buf.size(), static_cast<off_t>(op.offset));
  return r >= 0 ? static_cast<int>(r) : -errno;
}

}  // namespace

const op_vtable read_at_vtable = {.prepare = read_at_prepare,
                                  .attempt = read_at_attempt,
                                  .on_cqe = nullptr,
                                  .step = nullptr,
                                  .complete = resume_waiter,
                                  .optional_opcode = IORING_OP_READ,
                                  .offload = offload_of<read_at_op>,
                                  .attempt_nowait = read_at_nowait};
const op_vtable write_at_vtable = {.prepare = write_at_prepare,
                                   .attempt = write_at_attempt,
                                   .on_cqe = nullptr,
                                   .step = nullptr,
                                   .complete = resume_waiter,
                                   .optional_opcode = IORING_OP_WRITE,
                                   .offload = offload_of<write_at_op>,
                                   .attempt_nowait = nullptr};

}  // namespace detail

result<file> file::open(const std::string& path, int flags, int mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return unexpected(errno_code(-errno));
  return file(detail::fd_handle(fd));
}

result<file> file::adopt(int fd) {
  struct stat st;
  if (::fstat(fd, &st) < 0) return unexpected(errno_code(-errno));
  if (S_ISDIR(st.st_mode)) return unexpected(std::make_error_code(std::errc::is_a_directory));
  if (!S_ISREG(st.st_mode)) return unexpected(std::make_error_code(std::errc::invalid_argument));
  return file(detail::fd_handle(fd));
}

result<std::uint64_t> file::size() const {
  struct stat st;
  if (::fstat(fd_.get(), &st) < 0) return unexpected(errno_code(-errno));
  return static_cast<std::uint64_t>(st.st_size);
}

detail::close_op file::close() noexcept {
  int fd = fd_.release();
  detail::note_fd_closed(fd);
  return detail::close_op(fd);
}

}  // namespace ringio
