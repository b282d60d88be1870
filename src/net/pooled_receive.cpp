// SPDX-License-Identifier: Apache-2.0
// A receive into a pool buffer chosen when data is there (see pooled_receive.hpp).
#include "ringio/net/pooled_receive.hpp"

#include <liburing.h>
#include <sys/socket.h>

#include <cerrno>

#include "core/sys.hpp"
#include "net/buffer_pool_core.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {
namespace {

void pooled_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<pooled_recv_op&>(b);
  if (op.id >= 0) {  // no buffer ring: the buffer was taken before the start
    io_uring_prep_recv(&sqe, op.fd, op.core->address(static_cast<unsigned>(op.id)), op.core->size(), 0);
    return;
  }
  // The kernel picks a buffer once data is there; until then the request holds none.
  io_uring_prep_recv(&sqe, op.fd, nullptr, static_cast<unsigned>(op.core->size()), 0);
  sqe.flags |= IOSQE_BUFFER_SELECT;
  sqe.buf_group = static_cast<__u16>(op.core->group());
  sqe.ioprio |= IORING_RECVSEND_POLL_FIRST;
}

// Readiness: take a buffer only for data that is there.
int pooled_attempt(op_base& b) noexcept {
  auto& op = static_cast<pooled_recv_op&>(b);
  // A cancelled receive reads nothing, even when readiness won the race against the
  // cancel (uring-poll): the data stays in the socket for the next call, instead of
  // being delivered to a caller that may no longer want it (when_any drops a loser).
  if (op.cancel_requested) return -ECANCELED;
  if (op.id < 0) {
    op.id = op.core->take_free();
    if (op.id < 0) return -ENOBUFS;
  }
  const auto id = static_cast<unsigned>(op.id);
  ssize_t r = ::ringio::detail::sys::recv(op.fd, op.core->address(id), op.core->size(), MSG_DONTWAIT);
  if (r <= 0) {
    int err = r < 0 ? -errno : 0;
    op.core->give_back(id);
    op.id = -1;
    return err;
  }
  op.drained = static_cast<std::size_t>(r) < op.core->size();
  return static_cast<int>(r);
}

}  // namespace

const op_vtable pooled_recv_vtable = {.prepare = pooled_prepare,
                                      .attempt = pooled_attempt,
                                      .on_cqe = nullptr,
                                      .step = nullptr,
                                      .complete = resume_waiter};

bool pooled_recv_op::take_buffer_for_submission() noexcept {
  if (id >= 0) return true;
  io_context* c = io_context::current();
  if (c == nullptr || c->backend() != backend_kind::uring || core->group() >= 0) return true;
  id = core->take_free();  // a completion backend without a buffer ring
  if (id >= 0) return true;
  res = -ENOBUFS;
  return false;
}

result<pooled_buffer> pooled_recv_op::get_result() noexcept {
  if (id < 0 && (cqe_flags & IORING_CQE_F_BUFFER) != 0) {
    // The kernel picked from the ring (one buffer: this receive asks for no bundle).
    const auto picked = static_cast<unsigned>(cqe_flags >> IORING_CQE_BUFFER_SHIFT);
    if (res <= 0) {
      core->received_nothing(picked, false);
      if (res < 0) return unexpected(op_error(*this));
      return pooled_buffer{};
    }
    std::size_t offset = 0;
    core->received(picked, static_cast<std::size_t>(res),
                   [&](unsigned, std::size_t off, std::size_t) { offset = off; });
    return pooled_buffer(core, picked, offset, static_cast<std::size_t>(res));
  }
  const int taken = id;
  id = -1;
  if (res == -ENOBUFS) core->ran_dry();  // a ring smaller than the pool grows
  if (res <= 0) {
    if (taken >= 0) core->give_back(static_cast<unsigned>(taken));
    if (res < 0) return unexpected(op_error(*this));
    return pooled_buffer{};
  }
  return pooled_buffer(core, static_cast<unsigned>(taken), 0, static_cast<std::size_t>(res));
}

}  // namespace ringio::detail

namespace ringio {

detail::pooled_recv_op receive_pooled(stream_socket& socket, buffer_pool& pool) noexcept {
  return socket.on_socket(detail::pooled_recv_op{&pool.core(), socket.operation_fd()});
}

}  // namespace ringio
