// SPDX-License-Identifier: Apache-2.0
#include "net/missed_wakeup_sweep.hpp"

#include "core/loop_state.hpp"
#include "net/multishot_recv_state.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {

missed_wakeup_sweep::missed_wakeup_sweep() noexcept {
  static const op_vtable vt = {.prepare = nullptr,
                               .attempt = nullptr,
                               .on_cqe = nullptr,
                               .step = nullptr,
                               .complete = &missed_wakeup_sweep::on_check};
  check_.vt = &vt;
  check_.self = this;
}

// O(1) both ways: each receiver remembers its slot (a wait per message must not scan).
void missed_wakeup_sweep::watch(multishot_recv_state& r) {
  if (r.sweep_slot != multishot_recv_state::no_slot) return;
  r.sweep_slot = watched_.size();
  watched_.push_back({&r, round_});
  if (!scheduled_) {
    check_.ctx = io_context::current();
    if (check_.ctx != nullptr) schedule();
  }
}

void missed_wakeup_sweep::unwatch(multishot_recv_state& r) noexcept {
  const std::size_t i = r.sweep_slot;
  if (i == multishot_recv_state::no_slot) return;
  r.sweep_slot = multishot_recv_state::no_slot;
  watched_[i] = watched_.back();
  watched_.pop_back();
  if (i < watched_.size()) watched_[i].receiver->sweep_slot = i;
}

void missed_wakeup_sweep::stop() noexcept {
  if (scheduled_) check_.ctx->cancel_check(check_);
  scheduled_ = false;
  for (const entry& e : watched_) e.receiver->sweep_slot = multishot_recv_state::no_slot;
  watched_.clear();
}

void missed_wakeup_sweep::schedule() noexcept {
  check_.deadline_ns = monotonic_ns() + std::chrono::nanoseconds(interval).count();
  try {
    check_.ctx->schedule_check(check_);
    scheduled_ = true;
  } catch (...) {  // no memory for the heap slot: go without the safety net
    scheduled_ = false;
  }
}

void missed_wakeup_sweep::on_check(op_base& op) noexcept {
  auto* self = static_cast<check_op&>(op).self;
  self->scheduled_ = false;
  self->sweep();
  if (!self->watched_.empty()) self->schedule();
}

void missed_wakeup_sweep::sweep() noexcept {
  const std::uint64_t round = round_++;
  fds_.clear();
  suspects_.clear();
  for (const entry& e : watched_) {
    if (e.since >= round || !e.receiver->waits_on_armed_request()) continue;
    if (e.receiver->fixed_file) continue;  // a direct descriptor: no fd that poll(2) could check
    fds_.push_back({e.receiver->fd, POLLIN | POLLRDHUP, 0});
    suspects_.push_back(e.receiver);
  }
  if (fds_.empty() || ::poll(fds_.data(), fds_.size(), 0) <= 0) return;
  if (io_context* loop = io_context::current()) ++loop->state().counters.missed_wakeup_sweeps;
  for (std::size_t i = 0; i < fds_.size(); ++i)
    if (fds_[i].revents != 0) suspects_[i]->rearm_after_missed_wakeup();
}

}  // namespace ringio::detail
