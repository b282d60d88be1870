// SPDX-License-Identifier: Apache-2.0
// epoll_backend — the readiness backend: an operation first tries its syscall; on
// EAGAIN it waits in its fd's reader or writer list until epoll reports the fd ready
// (edge triggered, registered once per fd), then tries again. Deadlines live in a heap
// and bound the epoll wait.
//
// Closed descriptors: when ringio closes an fd its generation moves on
// (fd_generation.hpp). Operations still waiting on the old file under that number
// complete with -EBADF (bad_file_descriptor) as soon as the number is watched again
// (a new socket reusing it) or an event of the old file arrives; they never run their
// syscall on the number's new file. cancel_fd() fails every waiter of a number with
// -ECANCELED.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/loop_state.hpp"
#include "core/op_wait_list.hpp"
#include "core/perturbation.hpp"
#include "core/timer_heap.hpp"

namespace ringio::detail {

class epoll_backend final : public backend {
 public:
  epoll_backend(io_context& ctx, loop_state& st);
  ~epoll_backend() override;

  bool start(op_base& op) override;
  [[nodiscard]] bool runs_inline(const op_base& op) const noexcept override {
    (void)op;
    return true;
  }
  void cancel(op_base& op) noexcept override;
  void poll(bool block, std::int64_t wake_at_ns) override;
  void wake() noexcept override;
  void cancel_all() noexcept override;
  void cancel_fd(int fd, bool direct) noexcept override;
  [[nodiscard]] std::size_t in_flight() const noexcept override { return in_flight_; }
  [[nodiscard]] std::string describe() const override;

 private:
  using wait_list = op_wait_list;
  struct fd_state {
    wait_list readers;
    wait_list writers;
    std::uint32_t generation = 0;  // fd_generation() when registered
    bool registered = false;
    // Readiness as last seen: cleared by an attempt that hit EAGAIN, set by an edge.
    // An operation on a direction known not to be ready waits without trying first.
    bool readable = true;
    bool writable = true;
    // The peer closed or the socket failed: the condition stays, and no further edge
    // will announce it, so readiness is never cleared again.
    bool read_closed = false;
    bool write_closed = false;
  };

  bool complete_now(op_base& op, int res) noexcept;
  void fail(op_base& op, int res) noexcept;
  void fail_waiters(fd_state& s, int res) noexcept;
  bool drop_stale(std::size_t idx) noexcept;
  bool watch(op_base& op) noexcept;
  fd_state* known(int fd) noexcept;
  void run_waiters(std::size_t idx, bool writers) noexcept;
  void expire_timers() noexcept;
  void finish(op_base& op) noexcept;
  wait_list& list_of(op_base& op) noexcept;
  std::int64_t wait_timeout_ns(std::int64_t wake_at_ns) const noexcept;

  io_context& ctx_;
  loop_state& st_;
  int epfd_ = -1;
  int wake_fd_ = -1;
  std::vector<fd_state> fds_;
  timer_heap timers_;
  std::size_t in_flight_ = 0;
  perturbation perturb_;  // RINGIO_PERTURB: a seeded test mode (off by default)
};

}  // namespace ringio::detail
