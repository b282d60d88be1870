// SPDX-License-Identifier: Apache-2.0
// deadline: lazy re-arming on top of the loop's event operations (see deadline.hpp).
#include "ringio/time/deadline.hpp"

#include <cassert>
#include <cerrno>

#include "ringio/detail/clock.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/io_context.hpp"

namespace ringio {
namespace detail {

const op_vtable deadline_wait_vtable = {
    .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};

/// One armed wait: an event operation whose deadline_ns is the time it was armed for
/// (0: none). It ends by the loop's deadline heap (timed_out), by a stop, or by
/// complete_event_later(rearm) from deadline::kick().
class deadline_wait_op : public io_operation<deadline_wait_op> {
 public:
  /// The result of a wake-up that asks the waiter to look at the deadline again.
  static constexpr int rearm = 1;

  explicit deadline_wait_op(std::int64_t at_ns) noexcept : io_operation(&deadline_wait_vtable, op_kind::event) {
    deadline_ns = at_ns;
  }
  int get_result() const noexcept { return res; }
};

}  // namespace detail

deadline::deadline(clock::time_point at) noexcept : at_ns_(detail::to_monotonic_ns(at)) {}

deadline::~deadline() { assert(waiter_ == nullptr && "a deadline destroyed while a task waits on it"); }

void deadline::reset(clock::time_point at) noexcept {
  at_ns_ = detail::to_monotonic_ns(at);
  // Later than the armed time: the waiter finds the new time when the old one comes.
  if (waiter_ != nullptr && (waiter_->deadline_ns == 0 || at_ns_ < waiter_->deadline_ns)) kick();
}

void deadline::extend(std::chrono::nanoseconds d) noexcept {
  at_ns_ = detail::deadline_after(d);
  if (waiter_ != nullptr && (waiter_->deadline_ns == 0 || at_ns_ < waiter_->deadline_ns)) kick();
}

void deadline::disarm() noexcept { at_ns_ = 0; }

void deadline::cancel() noexcept {
  at_ns_ = 0;
  if (waiter_ == nullptr) return;
  cancel_pending_ = true;
  kick();
}

bool deadline::expired() const noexcept { return at_ns_ != 0 && at_ns_ <= detail::monotonic_ns(); }

deadline::clock::time_point deadline::expiry() const noexcept {
  if (at_ns_ == 0) return clock::time_point::max();
  return clock::time_point(std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(at_ns_)));
}

// Wakes the waiter through the ready queue; a waiter already completing looks at the
// deadline anyway.
void deadline::kick() noexcept {
  if (waiter_->ctx != nullptr) (void)waiter_->ctx->complete_event_later(*waiter_, detail::deadline_wait_op::rearm);
}

task<result<void>> deadline::wait() {
  assert(waiter_ == nullptr && "only one task may wait on a deadline");
  cancel_pending_ = false;
  for (;;) {
    if (expired()) co_return result<void>{};
    detail::deadline_wait_op op(at_ns_);
    waiter_ = &op;
    const int res = co_await op;
    waiter_ = nullptr;
    if (cancel_pending_) {
      cancel_pending_ = false;
      co_return unexpected(std::errc::operation_canceled);
    }
    const bool look_again = res == detail::deadline_wait_op::rearm || (res == -ECANCELED && op.timed_out);
    // Anything else is a stop or the loop's shutdown.
    if (!look_again) co_return unexpected(res < 0 ? errno_code(res) : errno_code(-ECANCELED));
  }
}

}  // namespace ringio
