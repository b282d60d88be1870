// SPDX-License-Identifier: Apache-2.0
// multishot accept: one armed IORING_OP_ACCEPT (IORING_ACCEPT_MULTISHOT) per acceptor.
#include "ringio/net/multishot_acceptor.hpp"

#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <utility>

#include "core/sys.hpp"
#include "ringio/detail/fd_generation.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {

/// The armed request itself, heap-allocated once per acceptor: when the acceptor is
/// destroyed while the kernel still holds the request, the state outlives it
/// (orphaned) until the final CQE arrives.
class multishot_accept_state : public op_base {
 public:
  struct accepted {
    int fd;  // a descriptor, or a slot of the file table
    bool direct;
  };

  multishot_accept_state(int listener_fd, bool direct) noexcept;
  ~multishot_accept_state() {
    for (accepted a : ready) {
      if (a.direct) {
        if (ctx != nullptr && ctx->on_loop_thread()) ctx->close_direct(a.fd);
        continue;
      }
      note_fd_closed(a.fd);
      ::ringio::detail::sys::close(a.fd);
    }
  }

  void arm(io_context& ctx) noexcept {
    if (armed) return;
    armed = true;
    cancel_requested = cancel_submitted = false;
    state = op_state::idle;
    if (ctx.start(*this)) {  // refused at once (the context is shutting down)
      armed = false;
      if (res != -ECANCELED) error = res;
    }
  }

  std::deque<accepted> ready;  // accepted, not yet taken (grows only under bursts)
  int error = 0;               // the error that ended the last multishot request
  bool armed = false;
  bool orphaned = false;
  bool stopping = false;        // multishot_acceptor::stop(): no more arming
  bool want_direct;             // accept into the loop's file table when it has room
  bool direct_armed = false;    // the request in flight accepts into the table
  bool table_was_full = false;  // the last direct request ended on a full table
  accept_next_op* consumer = nullptr;
};

namespace {

// Free slots below which a direct multishot accept stops: it cannot be told how many
// connections to take, and one that finds the table full loses the connection.
unsigned direct_headroom(unsigned table_size) noexcept {
  unsigned h = table_size / 16;
  return h < 1 ? 1 : (h > 64 ? 64 : h);
}

void multishot_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& s = static_cast<multishot_accept_state&>(b);
  s.direct_armed = false;
  const unsigned table = s.want_direct ? s.ctx->direct_table_size() : 0;
  if (table == 0) {
    io_uring_prep_multishot_accept(&sqe, b.fd, nullptr, nullptr, SOCK_CLOEXEC);
  } else if (!s.table_was_full && s.ctx->direct_free() >= direct_headroom(table)) {
    s.direct_armed = true;
    io_uring_prep_multishot_accept_direct(&sqe, b.fd, nullptr, nullptr, 0);  // no CLOEXEC: EINVAL
  } else {
    // (Nearly) full: one normal accept, so that the next arm looks at the table again.
    s.table_was_full = false;
    io_uring_prep_accept(&sqe, b.fd, nullptr, nullptr, SOCK_CLOEXEC);
  }
}

// Every CQE: a connection (res >= 0) or the error that ends the request.
void multishot_on_cqe(op_base& b, int res, unsigned flags) noexcept {
  auto& s = static_cast<multishot_accept_state&>(b);
  if (res < 0) {
    // The table was full after all: the kernel closed the connection it had taken.
    // Nothing to report for it; the next arm accepts normally.
    if (res == -ENFILE && s.direct_armed) {
      s.table_was_full = true;
      return;
    }
    // -ECANCELED not asked for (stream_listener::cancel() cancels the waiting next()
    // itself): the request is re-armed for the next consumer.
    if (res != -ECANCELED) s.error = res;
    return;
  }
  const bool direct = s.direct_armed;
  if (direct) {
    s.ctx->direct_reserve();
    if ((flags & IORING_CQE_F_MORE) != 0 && !s.cancel_submitted &&
        s.ctx->direct_free() < direct_headroom(s.ctx->direct_table_size()))
      s.ctx->cancel(s);  // ends with -ECANCELED; the next arm looks at the table again
  }
  if (s.consumer != nullptr && s.ready.empty()) {
    accept_next_op* c = s.consumer;
    s.consumer = nullptr;
    c->accepted_direct = direct;
    if (c->ctx->complete_event(*c, res)) return;
  }
  s.ready.push_back({res, direct});
}

// The request ended (final CQE): report its error, re-arm for a waiting consumer.
void multishot_complete(op_base& b) noexcept {
  auto& s = static_cast<multishot_accept_state&>(b);
  s.armed = false;
  if (s.orphaned) {
    delete &s;
    return;
  }
  if (s.consumer == nullptr) return;
  accept_next_op* c = s.consumer;
  if (s.error == 0 && s.stopping) {  // the last connection was taken: report the end
    s.consumer = nullptr;
    (void)c->ctx->complete_event(*c, -ECANCELED);
    return;
  }
  if (s.error != 0) {
    s.consumer = nullptr;
    // A consumer cancelled a moment ago (its completion has not run yet) cannot take
    // the error: it stays for the next call. Taken out first: the consumer resumes
    // inside complete_event and may destroy the acceptor, and this state with it.
    const int err = std::exchange(s.error, 0);
    if (!c->ctx->complete_event(*c, err)) s.error = err;
  } else {
    s.arm(*c->ctx);  // ended without a reason: try again
  }
}

// The consumer finished (with a connection, an error or a cancel).
void next_complete(op_base& b) noexcept {
  auto& op = static_cast<accept_next_op&>(b);
  if (op.owner->consumer == &op) op.owner->consumer = nullptr;
  resume_waiter(op);
}

const op_vtable multishot_vtable = {.prepare = multishot_prepare,
                                    .attempt = nullptr,
                                    .on_cqe = multishot_on_cqe,
                                    .step = nullptr,
                                    .complete = multishot_complete};

}  // namespace

const op_vtable accept_next_vtable = {
    .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = next_complete};

multishot_accept_state::multishot_accept_state(int listener_fd, bool direct) noexcept
    : op_base(&multishot_vtable), want_direct(direct) {
  fd = listener_fd;
}

fd_handle accept_next_op::direct_handle() const noexcept { return fd_handle::direct(res, *owner->ctx); }

bool accept_next_op::uses_multishot() noexcept {
  io_context* ctx = io_context::current();
  return ctx != nullptr && ctx->backend() == backend_kind::uring;
}

bool accept_next_op::take_ready() noexcept {
  if (!owner->ready.empty()) {
    res = owner->ready.front().fd;
    accepted_direct = owner->ready.front().direct;
    owner->ready.pop_front();
    return true;
  }
  if (owner->error != 0 && !owner->armed) {
    res = owner->error;
    owner->error = 0;
    return true;
  }
  if (owner->stopping && !owner->armed) {  // stopped, and nothing more can come
    res = -ECANCELED;
    return true;
  }
  return false;
}

bool accept_next_op::stopped_without_multishot() noexcept {
  if (!owner->stopping || uses_multishot()) return false;
  res = -ECANCELED;
  return true;
}

bool accept_next_op::wait(bool suspended) noexcept {
  if (!suspended) return false;  // stopped before it started
  owner->consumer = this;
  if (owner->stopping) return true;  // (armed: the request's last connections, or its end)
  fallback.listener->set_nonblocking(false);
  owner->arm(*ctx);
  if (!owner->armed && owner->error != 0) {  // could not arm: report why
    int err = std::exchange(owner->error, 0);
    owner->consumer = nullptr;
    ctx->complete_event(*this, err);
  }
  return true;
}

}  // namespace ringio::detail

namespace ringio {

multishot_acceptor::multishot_acceptor(stream_listener& listener)
    : state_(new detail::multishot_accept_state(listener.native_handle(), listener.direct_)),
      listener_(&listener.fd_),
      direct_(listener.direct_) {}

multishot_acceptor::~multishot_acceptor() {
  if (!state_->armed) {
    delete state_;
    return;
  }
  // The kernel still holds the request: cancel it; its final CQE frees the state. Off
  // the loop's thread the context's shutdown cancels it instead.
  state_->orphaned = true;
  state_->consumer = nullptr;
  if (io_context::current() == state_->ctx) state_->ctx->cancel(*state_);
}

detail::accept_next_op multishot_acceptor::next() noexcept { return {state_, listener_, direct_}; }

void multishot_acceptor::stop() noexcept {
  state_->stopping = true;
  if (state_->armed && !state_->cancel_requested && io_context::current() == state_->ctx) state_->ctx->cancel(*state_);
}

}  // namespace ringio
