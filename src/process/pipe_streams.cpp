// SPDX-License-Identifier: Apache-2.0
// The pipe operations and the two pipe ends.
#include <liburing.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdint>

#include "core/sigpipe.hpp"
#include "ringio/detail/fd_generation.hpp"
#include "ringio/error.hpp"
#include "ringio/process/pipe_reader.hpp"
#include "ringio/process/pipe_writer.hpp"

namespace ringio::detail {
namespace {

constexpr std::uint64_t current_position = ~std::uint64_t{0};  // offset -1: read or write where the file is

void pipe_read_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<pipe_read_op&>(b);
  io_uring_prep_read(&sqe, op.fd, op.buf.data(), static_cast<unsigned>(op.buf.size()), current_position);
}
// RWF_NOWAIT: EAGAIN instead of blocking, whether or not the descriptor is O_NONBLOCK.
int pipe_read_attempt(op_base& b) noexcept {
  auto& op = static_cast<pipe_read_op&>(b);
  iovec v{op.buf.data(), op.buf.size()};
  ssize_t r = ::preadv2(op.fd, &v, 1, -1, RWF_NOWAIT);
  return r >= 0 ? static_cast<int>(r) : -errno;
}
void pipe_write_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<pipe_write_op&>(b);
  io_uring_prep_write(&sqe, op.fd, op.buf.data(), static_cast<unsigned>(op.buf.size()), current_position);
}
int pipe_write_attempt(op_base& b) noexcept {
  auto& op = static_cast<pipe_write_op&>(b);
  iovec v{const_cast<std::byte*>(op.buf.data()), op.buf.size()};
  ssize_t r = ::pwritev2(op.fd, &v, 1, -1, RWF_NOWAIT);
  return r >= 0 ? static_cast<int>(r) : -errno;
}

}  // namespace

const op_vtable pipe_read_vtable = {.prepare = pipe_read_prepare,
                                    .attempt = pipe_read_attempt,
                                    .on_cqe = nullptr,
                                    .step = nullptr,
                                    .complete = resume_waiter};
const op_vtable pipe_write_vtable = {.prepare = pipe_write_prepare,
                                     .attempt = pipe_write_attempt,
                                     .on_cqe = nullptr,
                                     .step = nullptr,
                                     .complete = resume_waiter};

}  // namespace ringio::detail

namespace ringio::process {

task<result<std::string>> pipe_reader::read_to_end(std::size_t max_bytes) {
  std::string all;
  for (;;) {
    std::size_t room = std::min<std::size_t>(max_bytes + 1 - all.size(), 64 * 1024);
    std::size_t old = all.size();
    all.resize(old + room);
    auto n = co_await read_some(mutable_buffer(all.data() + old, room));
    if (!n) co_return unexpected(n.error());
    all.resize(old + *n);
    if (*n == 0) co_return all;
    if (all.size() > max_bytes) co_return unexpected(ringio::make_error_code(ringio::errc::message_too_long));
  }
}

detail::close_op pipe_reader::close() noexcept {
  int fd = fd_.release();
  detail::note_fd_closed(fd);
  return detail::close_op(fd);
}

pipe_writer::pipe_writer(detail::fd_handle fd) noexcept : fd_(std::move(fd)) { detail::ignore_sigpipe_once(); }

task<result<void>> pipe_writer::write_all(const_buffer buf) {
  while (buf.size() != 0) {
    auto n = co_await write_some(buf);
    if (!n) co_return unexpected(n.error());
    buf = buf.skip(*n);
  }
  co_return result<void>{};
}

detail::close_op pipe_writer::close() noexcept {
  int fd = fd_.release();
  detail::note_fd_closed(fd);
  return detail::close_op(fd);
}

}  // namespace ringio::process
