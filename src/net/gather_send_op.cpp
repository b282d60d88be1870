// SPDX-License-Identifier: Apache-2.0
// io_uring and readiness faces of the gather send.
#include "ringio/detail/gather_send_op.hpp"

#include <liburing.h>
#include <sys/socket.h>

#include <cerrno>

#include "core/sys.hpp"
#include "ringio/detail/stream_ops.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {

void gather_send_op::fill() noexcept {
  std::size_t n = 0, total = 0;
  std::size_t off = offset;
  for (std::size_t i = index; i < bufs.size() && n < max_gather_buffers && total < max_io_size; ++i) {
    const_buffer b = bufs[i].skip(off).first(max_io_size - total);
    off = 0;
    if (b.size() == 0) continue;
    iov[n++] = {const_cast<std::byte*>(b.data()), b.size()};
    total += b.size();
  }
  msg = {};
  msg.msg_iov = iov;
  msg.msg_iovlen = n;
}

void gather_send_op::advance(std::size_t n) noexcept {
  while (n != 0 && index < bufs.size()) {
    const std::size_t left = bufs[index].size() - offset;
    if (n < left) {
      offset += n;
      return;
    }
    n -= left;
    ++index;
    offset = 0;
  }
  skip_empty();
}

namespace {

void gather_send_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<gather_send_op&>(b);
  op.fill();
  io_uring_prep_sendmsg(&sqe, op.fd, &op.msg, MSG_NOSIGNAL);
}
int gather_send_attempt(op_base& b) noexcept {
  auto& op = static_cast<gather_send_op&>(b);
  op.fill();
  long r = ::ringio::detail::sys::sendmsg(op.fd, &op.msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  return r >= 0 ? static_cast<int>(r) : -errno;
}
bool gather_send_step(op_base& b) noexcept {
  auto& op = static_cast<gather_send_op&>(b);
  for (;;) {
    if (op.res < 0) return false;
    op.done += static_cast<std::size_t>(op.res);
    op.advance(static_cast<std::size_t>(op.res));
    if (!op.all || op.finished()) return false;
    if (!op.ctx->start(op)) return true;  // the next sendmsg is in flight
  }
}

}  // namespace

const op_vtable gather_send_vtable = {.prepare = gather_send_prepare,
                                      .attempt = gather_send_attempt,
                                      .on_cqe = nullptr,
                                      .step = gather_send_step,
                                      .complete = resume_waiter};

}  // namespace ringio::detail
