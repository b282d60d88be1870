// SPDX-License-Identifier: Apache-2.0
#include "ringio/signal_set.hpp"

#include <liburing.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace ringio {
namespace detail {
namespace {

void signal_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<signal_wait_op&>(b);
  op.handle->set_nonblocking(false);
  io_uring_prep_read(&sqe, op.fd, &op.info, sizeof op.info, static_cast<__u64>(-1));
}

int signal_attempt(op_base& b) noexcept {
  auto& op = static_cast<signal_wait_op&>(b);
  op.handle->set_nonblocking(true);
  ssize_t r = ::read(op.fd, &op.info, sizeof op.info);
  return r >= 0 ? static_cast<int>(r) : -errno;
}

}  // namespace

const op_vtable signal_wait_vtable = {.prepare = signal_prepare,
                                      .attempt = signal_attempt,
                                      .on_cqe = nullptr,
                                      .step = nullptr,
                                      .complete = resume_waiter};

}  // namespace detail

signal_set::signal_set(std::initializer_list<int> signals) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : signals) sigaddset(&mask, s);
  if (int err = pthread_sigmask(SIG_BLOCK, &mask, nullptr); err != 0)
    throw std::system_error(err, std::system_category(), "pthread_sigmask");
  int fd = ::signalfd(-1, &mask, SFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "signalfd");
  fd_ = detail::fd_handle(fd);
}

}  // namespace ringio
