// SPDX-License-Identifier: Apache-2.0
// sim_backend — the backend of a sim::world: a readiness backend whose readiness comes
// from the world's simulated network and whose timers run on its virtual clock. An
// operation tries its syscall (answered by the simulation for simulated sockets); on
// EAGAIN it waits in its descriptor's list until the network says the direction is
// ready. When nothing can run, poll() moves the virtual clock to the next timer or
// network event instead of sleeping. Real descriptors (files, pipes, the operations
// of other code) are watched with poll(2).
#pragma once

#include <poll.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/loop_state.hpp"
#include "core/op_wait_list.hpp"
#include "core/timer_heap.hpp"

namespace ringio::sim {
class world;
}

namespace ringio::detail {

class sim_network;
class host_scheduler;
struct sim_host;

class sim_backend final : public backend {
 public:
  sim_backend(io_context& ctx, loop_state& st, sim::world& w, std::unique_ptr<sim::world> owned);
  ~sim_backend() override;

  bool start(op_base& op) override;
  void cancel(op_base& op) noexcept override;
  void poll(bool block, std::int64_t wake_at_ns) override;
  void wake() noexcept override;
  void cancel_all() noexcept override;
  void cancel_fd(int fd, bool direct) noexcept override;
  [[nodiscard]] std::size_t in_flight() const noexcept override { return in_flight_; }
  [[nodiscard]] std::string describe() const override;

 private:
  using wait_list = op_wait_list;
  struct fd_waiters {
    wait_list readers;
    wait_list writers;
  };

  bool complete_now(op_base& op, int res) noexcept;
  void fail(op_base& op, int res) noexcept;
  wait_list& list_of(op_base& op) noexcept;
  bool run_waiters(int fd, bool writers) noexcept;
  bool serve_network() noexcept;
  bool serve_real(int timeout_ms) noexcept;
  bool expire_timers() noexcept;
  void finish(op_base& op) noexcept;
  bool ready(int fd, bool writers) const noexcept;
  [[nodiscard]] bool waits_on_real() const noexcept;
  void fail_all() noexcept;
  void poll_as_host(bool block, std::int64_t wake_at_ns);
  void list_real_waits(std::vector<pollfd>& out) const;

  io_context& ctx_;
  loop_state& st_;
  std::unique_ptr<sim::world> owned_;  // a world made for this context (RINGIO_BACKEND=sim)
  sim::world& world_;
  sim_network& net_;
  host_scheduler& hosts_;
  sim_host* host_;  // the host whose loop this is, or nullptr (the world's own thread)
  int wake_fd_ = -1;
  std::vector<fd_waiters> fds_;
  timer_heap timers_;
  std::size_t in_flight_ = 0;
  bool shut_down_ = false;  // the context cancelled everything: it is going away
};

}  // namespace ringio::detail
