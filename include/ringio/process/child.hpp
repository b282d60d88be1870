// SPDX-License-Identifier: Apache-2.0
// ringio/process/child.hpp — a running child process: its pipes, its exit status, signals.
#pragma once

#include <sys/types.h>

#include <chrono>

#include "ringio/detail/fd_handle.hpp"
#include "ringio/detail/wait_child_op.hpp"
#include "ringio/process/exit_status.hpp"
#include "ringio/process/pipe_reader.hpp"
#include "ringio/process/pipe_writer.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::process {

/// A child process started by process::spawn. Holds a pidfd, so signals and waits
/// reach this child even after its pid is reused. Destroying a child that has not been
/// waited for kills it (SIGKILL) and reaps it at once, so no zombie and no descriptor is
/// left behind on any path: a stopped wait, an exception, the io_context shutting down.
class child {
 public:
  /// No process.
  child() noexcept = default;
  /// Moves the process (and its pipes) out of `other`, which then holds none.
  child(child&& other) noexcept;
  /// Kills and reaps the process this one holds (if not reaped), then takes `other`'s.
  child& operator=(child&& other) noexcept;
  /// Kills (SIGKILL) and reaps the process if it has not been reaped.
  ~child();

  /// Its standard input when spawn_options::in was stdio::pipe (else not open).
  pipe_writer in;
  /// Its standard output when spawn_options::out was stdio::pipe (else not open).
  pipe_reader out;
  /// Its standard error when spawn_options::err was stdio::pipe (else not open).
  pipe_reader err;

  /// Waits for the process to end and reaps it: its exit_status. Cancellable (a stop or
  /// with_timeout leaves the process running and waitable again). Once reaped, every
  /// further wait returns the same status at once.
  [[nodiscard]] detail::wait_child_op wait() noexcept { return {pidfd_.get(), &reaped_, &status_}; }
  /// Waits up to `timeout`; then sends SIGTERM and waits up to `grace` more (no SIGTERM
  /// when grace is zero); then SIGKILL and waits. The status says which signal ended it.
  /// A stop of the awaiting task ends the wait with operation_canceled (the process runs on).
  task<result<exit_status>> wait_or_kill(std::chrono::milliseconds timeout,
                                         std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  /// Sends `signal` to the process (pidfd_send_signal). no_such_process once it was
  /// reaped; sending to one that exited but is not reaped yet succeeds and does nothing.
  result<void> kill(int signal = SIGKILL) noexcept;
  /// Sends `signal` to the child's process group (spawn_options::new_process_group),
  /// reaching the processes it started too. invalid_argument without a group of its own.
  result<void> kill_group(int signal = SIGKILL) noexcept;

  /// The process id (still valid for kill(2) until reaped).
  [[nodiscard]] pid_t id() const noexcept { return pid_; }
  /// Whether it holds a process not yet reaped.
  [[nodiscard]] bool running() const noexcept { return pid_ > 0 && !reaped_; }
  /// The pidfd (owned by this object), e.g. for poll(2).
  [[nodiscard]] int native_handle() const noexcept { return pidfd_.get(); }

 private:
  friend class spawner;
  void reap_now() noexcept;
  pid_t pid_ = -1;
  detail::fd_handle pidfd_;
  bool reaped_ = false;
  bool own_group_ = false;
  exit_status status_{};
};

}  // namespace ringio::process
