// SPDX-License-Identifier: Apache-2.0
// io_uring and readiness faces of the stream operations.
#include "ringio/detail/stream_ops.hpp"

#include <liburing.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "core/sys.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/detail/fd_generation.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {
namespace {

int syscall_result(long r) noexcept { return r >= 0 ? static_cast<int>(r) : -errno; }

// ---- recv ----
void recv_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<recv_op&>(b);
  io_uring_prep_recv(&sqe, op.fd, op.buf.data(), op.buf.size(), op.flags);
  if (op.wait_first) sqe.ioprio |= IORING_RECVSEND_POLL_FIRST;
}
int recv_attempt(op_base& b) noexcept {
  auto& op = static_cast<recv_op&>(b);
  int r = syscall_result(::ringio::detail::sys::recv(op.fd, op.buf.data(), op.buf.size(), op.flags | MSG_DONTWAIT));
  op.drained = op.stream && r > 0 && static_cast<std::size_t>(r) < op.buf.size() && (op.flags & MSG_PEEK) == 0;
  return r;
}

// ---- recv_exact: recv into the unfilled rest until full or EOF ----
void recv_exact_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<recv_exact_op&>(b);
  mutable_buffer rest = op.buf.skip(op.done).first(max_io_size);
  io_uring_prep_recv(&sqe, op.fd, rest.data(), rest.size(), 0);
}
int recv_exact_attempt(op_base& b) noexcept {
  auto& op = static_cast<recv_exact_op&>(b);
  mutable_buffer rest = op.buf.skip(op.done).first(max_io_size);
  int r = syscall_result(::ringio::detail::sys::recv(op.fd, rest.data(), rest.size(), MSG_DONTWAIT));
  op.drained = r > 0 && static_cast<std::size_t>(r) < rest.size();
  return r;
}

// ---- send ----
void send_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<send_op&>(b);
  io_uring_prep_send(&sqe, op.fd, op.buf.data(), op.buf.size(), op.flags);
}
int send_attempt(op_base& b) noexcept {
  auto& op = static_cast<send_op&>(b);
  return syscall_result(::ringio::detail::sys::send(op.fd, op.buf.data(), op.buf.size(), op.flags | MSG_DONTWAIT));
}

// ---- send_all: send the unsent rest until nothing is left ----
void send_all_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<send_all_op&>(b);
  const_buffer rest = op.buf.skip(op.done).first(max_io_size);
  io_uring_prep_send(&sqe, op.fd, rest.data(), rest.size(), MSG_NOSIGNAL);
}
int send_all_attempt(op_base& b) noexcept {
  auto& op = static_cast<send_all_op&>(b);
  const_buffer rest = op.buf.skip(op.done).first(max_io_size);
  return syscall_result(::ringio::detail::sys::send(op.fd, rest.data(), rest.size(), MSG_NOSIGNAL | MSG_DONTWAIT));
}

// Shared by the two "loop until the buffer is done" operations: returns true when the
// next step is in flight, false when `op` is finished (res < 0 is its error).
template <class Op>
bool loop_step(op_base& b, bool stop_at_zero) noexcept {
  auto& op = static_cast<Op&>(b);
  for (;;) {
    if (op.res < 0) return false;
    if (op.res == 0 && stop_at_zero) return false;  // EOF: the count says how far we got
    op.done += static_cast<std::size_t>(op.res);
    if (op.done >= op.buf.size()) return false;
    // A deadline that passed between steps ends the operation here: a step that
    // completes at once (data or room already there; a zero-copy send waits for its
    // notification outside the request) would otherwise outrun its linked timeout.
    if (op.deadline_ns != 0 && monotonic_ns() >= op.deadline_ns) {
      op.timed_out = true;
      op.res = -ECANCELED;
      return false;
    }
    if (!op.ctx->start(op)) return true;  // the next step is in flight
  }
}
bool recv_exact_step(op_base& b) noexcept { return loop_step<recv_exact_op>(b, true); }
bool send_all_step(op_base& b) noexcept { return loop_step<send_all_op>(b, false); }

// ---- shutdown, close ----
void shutdown_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  io_uring_prep_shutdown(&sqe, b.fd, static_cast<shutdown_op&>(b).how);
}
int shutdown_attempt(op_base& b) noexcept {
  return syscall_result(::ringio::detail::sys::shutdown(b.fd, static_cast<shutdown_op&>(b).how));
}
void close_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  if (static_cast<close_op&>(b).direct) io_uring_prep_close_direct(&sqe, static_cast<unsigned>(b.fd));
  else io_uring_prep_close(&sqe, b.fd);
}
int close_attempt(op_base& b) noexcept {
  note_fd_closed(b.fd);
  return syscall_result(::ringio::detail::sys::close(b.fd));
}

}  // namespace

int close_op::close_now() noexcept { return syscall_result(::ringio::detail::sys::close(fd)); }

const op_vtable recv_vtable = {
    .prepare = recv_prepare, .attempt = recv_attempt, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};
const op_vtable recv_exact_vtable = {.prepare = recv_exact_prepare,
                                     .attempt = recv_exact_attempt,
                                     .on_cqe = nullptr,
                                     .step = recv_exact_step,
                                     .complete = resume_waiter};
const op_vtable send_vtable = {
    .prepare = send_prepare, .attempt = send_attempt, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};
const op_vtable send_all_vtable = {.prepare = send_all_prepare,
                                   .attempt = send_all_attempt,
                                   .on_cqe = nullptr,
                                   .step = send_all_step,
                                   .complete = resume_waiter};
const op_vtable shutdown_vtable = {.prepare = shutdown_prepare,
                                   .attempt = shutdown_attempt,
                                   .on_cqe = nullptr,
                                   .step = nullptr,
                                   .complete = resume_waiter};
const op_vtable close_vtable = {
    .prepare = close_prepare, .attempt = close_attempt, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};

}  // namespace ringio::detail
