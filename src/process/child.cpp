// SPDX-License-Identifier: Apache-2.0
// A child process: signals through its pidfd, waits with a deadline, and the kill and
// reap that leave no zombie behind.
#include "ringio/process/child.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "ringio/error.hpp"
#include "ringio/time/timeout.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace ringio::process {
namespace {

int pidfd_send_signal(int pidfd, int signal) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

}  // namespace

child::child(child&& o) noexcept
    : in(std::move(o.in)),
      out(std::move(o.out)),
      err(std::move(o.err)),
      pid_(std::exchange(o.pid_, -1)),
      pidfd_(std::move(o.pidfd_)),
      reaped_(std::exchange(o.reaped_, false)),
      own_group_(std::exchange(o.own_group_, false)),
      status_(o.status_) {}

child& child::operator=(child&& o) noexcept {
  if (this != &o) {
    reap_now();
    in = std::move(o.in);
    out = std::move(o.out);
    err = std::move(o.err);
    pid_ = std::exchange(o.pid_, -1);
    pidfd_ = std::move(o.pidfd_);
    reaped_ = std::exchange(o.reaped_, false);
    own_group_ = std::exchange(o.own_group_, false);
    status_ = o.status_;
  }
  return *this;
}

child::~child() { reap_now(); }

// SIGKILL cannot be caught, so the wait after it is short (a process in an
// uninterruptible kernel sleep finishes that sleep first).
void child::reap_now() noexcept {
  if (pid_ <= 0 || reaped_ || !pidfd_.valid()) return;
  (void)pidfd_send_signal(pidfd_.get(), SIGKILL);
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED) < 0 &&
         errno == EINTR) {
  }
  reaped_ = true;
}

result<void> child::kill(int signal) noexcept {
  if (pid_ <= 0 || !pidfd_.valid()) return unexpected(errno_code(-ESRCH));
  if (reaped_) return unexpected(errno_code(-ESRCH));
  if (pidfd_send_signal(pidfd_.get(), signal) < 0) return unexpected(errno_code(-errno));
  return {};
}

result<void> child::kill_group(int signal) noexcept {
  if (!own_group_) return unexpected(errno_code(-EINVAL));
  if (pid_ <= 0 || reaped_) return unexpected(errno_code(-ESRCH));
  if (::kill(-pid_, signal) < 0) return unexpected(errno_code(-errno));
  return {};
}

task<result<exit_status>> child::wait_or_kill(std::chrono::milliseconds timeout, std::chrono::milliseconds grace) {
  auto first = co_await with_timeout(wait(), timeout);
  if (first || first.error() != std::errc::timed_out) co_return first;
  if (grace.count() > 0) {
    (void)kill(SIGTERM);
    auto second = co_await with_timeout(wait(), grace);
    if (second || second.error() != std::errc::timed_out) co_return second;
  }
  (void)kill(SIGKILL);
  co_return co_await wait();
}

}  // namespace ringio::process
