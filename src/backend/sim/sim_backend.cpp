// SPDX-License-Identifier: Apache-2.0
#include "backend/sim/sim_backend.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "core/backend_factory.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/sim/world.hpp"
#include "sim/host_scheduler.hpp"
#include "sim/seed_env.hpp"
#include "sim/sim_network.hpp"

namespace ringio::detail {

std::unique_ptr<backend> make_sim_backend(io_context& ctx, loop_state& st, const io_context_options&) {
  std::unique_ptr<sim::world> owned;
  sim::world* w = sim::world::current();
  if (w == nullptr) {
    // RINGIO_BACKEND=sim or a context asked for sim without a world: one of its own,
    // seeded by RINGIO_SIM_SEED (default 1), calm unless RINGIO_SIM_FAULTS=hostile.
    const char* faults = std::getenv("RINGIO_SIM_FAULTS");
    bool hostile = faults != nullptr && std::string_view(faults) == "hostile";
    owned = std::make_unique<sim::world>(number_from_env("RINGIO_SIM_SEED").value_or(1),
                                         hostile ? sim::hostile() : sim::fault_model{});
    w = owned.get();
  }
  return std::make_unique<sim_backend>(ctx, st, *w, std::move(owned));
}

sim_backend::sim_backend(io_context& ctx, loop_state& st, sim::world& w, std::unique_ptr<sim::world> owned)
    : ctx_(ctx),
      st_(st),
      owned_(std::move(owned)),
      world_(w),
      net_(w.network()),
      hosts_(w.hosts()),
      host_(hosts_.running()) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::system_error(errno, std::system_category(), "eventfd");
  ++net_.loops;
}

sim_backend::~sim_backend() {
  --net_.loops;
  ::close(wake_fd_);
}

std::string sim_backend::describe() const {
  return "sim (seed " + std::to_string(world_.seed()) + ", virtual time, simulated TCP; readiness backend)";
}

sim_backend::wait_list& sim_backend::list_of(op_base& op) noexcept {
  fd_waiters& w = fds_[static_cast<std::size_t>(op.fd)];
  return op.want == interest::writable ? w.writers : w.readers;
}

bool sim_backend::complete_now(op_base& op, int res) noexcept {
  op.res = res;
  if (st_.sync_budget > 0) {
    --st_.sync_budget;
    op.state = op_state::done;
    return true;
  }
  ctx_.schedule_completion(op);
  return false;
}

bool sim_backend::start(op_base& op) {
  switch (op.kind) {
    case op_kind::nop:
      op.res = 0;
      ctx_.schedule_completion(op);
      return false;
    case op_kind::timer:
      if (op.deadline_ns <= monotonic_ns()) return complete_now(op, 0);
      op.state = op_state::in_flight;
      ++in_flight_;
      timers_.push(op);
      return false;
    case op_kind::io:
    case op_kind::event:
      break;
  }
  if (op.fixed_file) return complete_now(op, -EBADF);  // no file table here
  int r = op.vt->attempt(op);
  if (r != -EAGAIN) return complete_now(op, r);
  if (op.deadline_ns != 0 && op.deadline_ns <= monotonic_ns()) {
    op.timed_out = true;
    return complete_now(op, -ECANCELED);
  }
  if (op.fd < 0 || op.want == interest::none) return complete_now(op, -EBADF);
  auto idx = static_cast<std::size_t>(op.fd);
  if (idx >= fds_.size()) fds_.resize(idx + 1 > fds_.size() * 2 ? idx + 1 : fds_.size() * 2);
  op.state = op_state::in_flight;
  ++in_flight_;
  list_of(op).push(op);
  if (op.deadline_ns != 0) timers_.push(op);
  return false;
}

void sim_backend::cancel(op_base& op) noexcept { fail(op, -ECANCELED); }

void sim_backend::fail(op_base& op, int res) noexcept {
  if (op.state != op_state::in_flight) return;
  if (op.kind == op_kind::io) list_of(op).unlink(op);
  timers_.remove(op);
  --in_flight_;
  op.res = res;
  ctx_.schedule_completion(op);
}

void sim_backend::cancel_all() noexcept {
  shut_down_ = true;
  fail_all();
}

void sim_backend::fail_all() noexcept {
  for (fd_waiters& w : fds_) {
    while (w.readers.head != nullptr) cancel(*w.readers.head);
    while (w.writers.head != nullptr) cancel(*w.writers.head);
  }
  while (!timers_.empty()) cancel(*timers_.top());
}

void sim_backend::cancel_fd(int fd, bool direct) noexcept {
  auto idx = static_cast<std::size_t>(fd);
  if (direct || fd < 0 || idx >= fds_.size()) return;
  for (wait_list* l : {&fds_[idx].readers, &fds_[idx].writers})
    while (op_base* op = l->head) fail(*op, -ECANCELED);
}

void sim_backend::finish(op_base& op) noexcept {
  --in_flight_;
  finish_operation(op);
}

bool sim_backend::ready(int fd, bool writers) const noexcept { return writers ? net_.writable(fd) : net_.readable(fd); }

// Tries the waiters of one direction in order until one would still block. Returns
// whether any finished. (fds_ may grow while a resumed coroutine runs.)
bool sim_backend::run_waiters(int fd, bool writers) noexcept {
  auto idx = static_cast<std::size_t>(fd);
  auto list = [&]() -> wait_list& { return writers ? fds_[idx].writers : fds_[idx].readers; };
  bool any = false;
  op_base* last = list().tail;
  while (op_base* op = list().head) {
    int r = op->vt->attempt(*op);
    if (r == -EAGAIN) return any;
    list().unlink(*op);
    timers_.remove(*op);
    op->res = r;
    bool was_last = op == last;
    finish(*op);
    any = true;
    if (was_last) return any;
  }
  return any;
}

// Serves the simulated descriptors whose readiness changed, in the world's order.
bool sim_backend::serve_network() noexcept {
  bool any = false;
  while (net_.has_dirty()) {
    for (int fd : net_.take_dirty()) {
      auto idx = static_cast<std::size_t>(fd);
      if (idx >= fds_.size()) continue;
      if (fds_[idx].readers.head != nullptr && ready(fd, false)) any |= run_waiters(fd, false);
      if (idx < fds_.size() && fds_[idx].writers.head != nullptr && ready(fd, true)) any |= run_waiters(fd, true);
    }
  }
  return any;
}

// Real descriptors with waiters, and the wake-up eventfd: poll(2) for `timeout_ms`.
// The wake-up eventfd, then every real descriptor with waiters and what they wait for.
void sim_backend::list_real_waits(std::vector<pollfd>& out) const {
  out.push_back({wake_fd_, POLLIN, 0});
  for (std::size_t i = 0; i < fds_.size(); ++i) {
    const int fd = static_cast<int>(i);
    if (net_.is_virtual(fd)) continue;
    short ev = 0;
    if (fds_[i].readers.head != nullptr) ev |= POLLIN;
    if (fds_[i].writers.head != nullptr) ev |= POLLOUT;
    if (ev != 0) out.push_back({fd, ev, 0});
  }
}

bool sim_backend::serve_real(int timeout_ms) noexcept {
  std::vector<pollfd> fds;
  list_real_waits(fds);
  if (fds.size() == 1 && timeout_ms == 0) {
    std::uint64_t v;
    return ::read(wake_fd_, &v, sizeof v) > 0;
  }
  int n = ::poll(fds.data(), fds.size(), timeout_ms);
  ++st_.stats.kernel_waits;
  ++st_.counters.kernel_waits;
  if (n <= 0) return false;
  bool any = false;
  if (fds[0].revents != 0) {
    std::uint64_t v;
    any = ::read(wake_fd_, &v, sizeof v) > 0;
    ++st_.stats.eventfd_wakes;
    ++st_.counters.wakeups;
  }
  for (std::size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) any |= run_waiters(fds[i].fd, false);
    if (fds[i].revents & (POLLOUT | POLLHUP | POLLERR)) any |= run_waiters(fds[i].fd, true);
  }
  return any;
}

bool sim_backend::expire_timers() noexcept {
  bool any = false;
  std::int64_t now = monotonic_ns();
  while (!timers_.empty() && timers_.top()->deadline_ns <= now) {
    op_base& op = *timers_.top();
    timers_.remove(op);
    if (op.kind == op_kind::timer) {
      op.res = 0;
    } else {
      list_of(op).unlink(op);
      op.timed_out = true;
      op.res = -ECANCELED;
    }
    finish(op);
    any = true;
  }
  return any;
}

// Whether an operation waits on a real descriptor (not one of the world's sockets).
bool sim_backend::waits_on_real() const noexcept {
  for (std::size_t i = 0; i < fds_.size(); ++i)
    if ((fds_[i].readers.head != nullptr || fds_[i].writers.head != nullptr) && !net_.is_virtual(static_cast<int>(i)))
      return true;
  return false;
}

namespace {

std::int64_t real_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

// One step of the world: events due now, the descriptors they made ready, timers, the
// real descriptors. When nothing happened and the loop may block:
// - while something outside the world may finish (an operation on a real descriptor,
//   another thread's work for this loop), virtual time runs at real speed: poll(2)
//   until the next virtual event is due, then move the clock by the time that passed;
// - otherwise the virtual clock jumps to the next timer or network event;
// - with neither, nothing can ever happen (a deadlock): the world records it and every
//   operation in flight fails with operation_canceled, so the program unwinds through
//   its own error paths; if it still waits (on something that is no operation of this
//   loop), only another thread can wake it.
void sim_backend::poll(bool block, std::int64_t wake_at_ns) {
  if (host_ != nullptr) return poll_as_host(block, wake_at_ns);
  ++st_.stats.kernel_waits;
  ++st_.counters.kernel_waits;
  for (;;) {
    std::size_t events = net_.deliver_due();
    bool any = serve_network();
    any |= expire_timers();
    any |= serve_real(0);
    st_.stats.completions += events;
    if (any || !block) return;
    const std::int64_t now = net_.now();
    if (wake_at_ns != 0 && wake_at_ns <= now) return;
    if (events > 0) continue;  // delivered events may have readied nothing yet; look again
    std::int64_t next = net_.next_event();
    if (!timers_.empty() && (next == 0 || timers_.top()->deadline_ns < next)) next = timers_.top()->deadline_ns;
    if (wake_at_ns != 0 && (next == 0 || wake_at_ns < next)) next = wake_at_ns;
    if (waits_on_real() || ctx_.waits_outside()) {
      const std::int64_t gap = next == 0 ? -1 : next - now;
      const int timeout_ms =
          gap < 0 ? -1 : static_cast<int>(std::min<std::int64_t>((gap + 999'999) / 1'000'000, 1 << 30));
      const std::int64_t began = real_ns();
      const bool woke = serve_real(timeout_ms);
      const std::int64_t passed = real_ns() - began;
      net_.advance_to(gap < 0 ? now + passed : now + std::min(passed, gap));
      if (woke) return;
      continue;
    }
    if (next != 0) {
      net_.advance_to(next);
      continue;
    }
    if (in_flight_ > 0 && !shut_down_) {
      net_.note_deadlock(in_flight_);
      fail_all();
      return;
    }
    if (shut_down_) return;  // the context drains what it cancelled: nothing to wait for here
    serve_real(-1);
    return;
  }
}

// The loop of a host: a pass that finds work ends the host's turn and then returns to
// the loop; one that finds nothing tells the scheduler when this host has its next
// timer and ends the turn; the scheduler moves time when every host is idle.
void sim_backend::poll_as_host(bool block, std::int64_t wake_at_ns) {
  ++st_.stats.kernel_waits;
  ++st_.counters.kernel_waits;
  sim_host& h = *host_;
  // Called by the loop: it ran in this turn (ready tasks, posts to other hosts), so the
  // round is not idle even if this pass finds nothing.
  h.worked = true;
  for (;;) {
    if (h.deadlock) {  // counted by the scheduler: fail whatever this host waits for
      h.deadlock = false;
      if (!shut_down_) {
        fail_all();
        ctx_.cancel_waiting_events();
      }
    }
    if (h.stop_asked && !h.stop_sent && h.tasks != nullptr) {
      h.stop_sent = true;
      h.tasks->request_stop();
    }
    std::size_t events = net_.deliver_due();
    bool any = serve_network();
    any |= expire_timers();
    any |= serve_real(0);
    st_.stats.completions += events;
    const std::int64_t now = net_.now();
    if (any || !block || (wake_at_ns != 0 && wake_at_ns <= now) || !st_.ready.empty()) {
      h.worked = true;
      hosts_.end_turn(h);
      return;
    }
    if (events > 0) continue;  // delivered events may have readied nothing yet; look again
    std::int64_t next = timers_.empty() ? 0 : timers_.top()->deadline_ns;
    if (wake_at_ns != 0 && (next == 0 || wake_at_ns < next)) next = wake_at_ns;
    h.next_at = next;
    h.waits_real = waits_on_real() || ctx_.outside_work_pending();
    h.real_fds.clear();
    if (h.waits_real) list_real_waits(h.real_fds);
    h.idle = true;
    hosts_.end_turn(h);
  }
}

void sim_backend::wake() noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

}  // namespace ringio::detail
