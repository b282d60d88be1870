// SPDX-License-Identifier: Apache-2.0
// multishot recv with kernel-selected buffers (IORING_RECV_MULTISHOT + IOSQE_BUFFER_SELECT).
#include "ringio/net/multishot_receiver.hpp"

#include <liburing.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "backend/uring/uring_compat.hpp"
#include "core/loop_state.hpp"
#include "net/multishot_recv_state.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {
namespace {

void ms_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& s = static_cast<multishot_recv_state&>(b);
  io_uring_prep_recv_multishot(&sqe, s.fd, nullptr, 0, 0);
  sqe.flags |= IOSQE_BUFFER_SELECT;
  sqe.buf_group = static_cast<__u16>(s.pool.group());
  if (s.pool.bundles()) sqe.ioprio |= IORING_RECVSEND_BUNDLE;
}
void ms_on_cqe(op_base& b, int res, unsigned flags) noexcept {
  static_cast<multishot_recv_state&>(b).on_cqe(res, flags);
}
void ms_complete(op_base& b) noexcept { static_cast<multishot_recv_state&>(b).on_final(); }

const op_vtable multishot_recv_vtable = {
    .prepare = ms_prepare, .attempt = nullptr, .on_cqe = ms_on_cqe, .step = nullptr, .complete = ms_complete};

void next_complete(op_base& b) noexcept {
  auto& op = static_cast<recv_next_op&>(b);
  if (!op.use_fallback) op.owner->consumer_done(op);
  resume_waiter(op);
}

}  // namespace

const op_vtable recv_next_vtable = {
    .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = next_complete};

multishot_recv_state::multishot_recv_state(buffer_pool_core& p, int socket_fd) noexcept
    : op_base(&multishot_recv_vtable), pool(p) {
  fd = socket_fd;
  pool.acquire();
}

multishot_recv_state::~multishot_recv_state() {
  pool.sweep().unwatch(*this);
  for (std::size_t i = head_; i < queue_.size(); ++i) pool.give_back(queue_[i].id);
  pool.forget(*this);
  pool.release();
}

void multishot_recv_state::arm(io_context& ctx) noexcept {
  if (armed_ || starved_ || ended_) return;
  if (pool.group() < 0) {  // the pool is gone: nothing more can be received through it
    ended_ = true;
    end_res_ = -ENOBUFS;
    return;
  }
  armed_ = true;
  if (loop_ != nullptr) ++ctx.state().counters.multishot_rearms;  // armed before
  loop_ = &ctx;
  cancel_requested = cancel_submitted = false;
  state = op_state::idle;
  if (ctx.start(*this)) {  // refused at once: the context is shutting down
    armed_ = false;
    ended_ = true;
    end_res_ = res < 0 ? res : -ECANCELED;
  }
}

bool multishot_recv_state::take_ready(recv_next_op& c) noexcept {
  if (head_ < queue_.size()) {
    c.buffer_id = queue_[head_].id;
    c.buffer_offset = queue_[head_].offset;
    c.res = queue_[head_].len;
    pop_front();
    return true;
  }
  if (ended_) {
    c.res = end_res_;
    return true;
  }
  return false;
}

bool multishot_recv_state::take_queued(pooled_buffer& out) noexcept {
  if (head_ == queue_.size()) return false;
  const chunk c = queue_[head_];
  pop_front();
  out = pooled_buffer(&pool, c.id, c.offset, static_cast<std::size_t>(c.len));
  return true;
}

void multishot_recv_state::wait(recv_next_op& c) noexcept {
  consumer_ = &c;
  loop_ = c.ctx;
  if (starved_ && pool.available() == 0 && !pool.detached()) {
    pool.wait_for_buffer(*this);
    return;
  }
  starved_ = false;  // buffers came back meanwhile
  arm(*loop_);
  if (ended_) {
    finish_consumer(end_res_, 0, 0);  // could not arm: say why now
    return;
  }
  if (armed_) pool.sweep().watch(*this);
}

void multishot_recv_state::rearm_after_missed_wakeup() noexcept {
  if (waits_on_armed_request() && state == op_state::in_flight) ctx->cancel(*this);
}

// False when the consumer no longer waits (it was cancelled and its completion has not
// run yet): then the caller keeps what it wanted to hand over.
bool multishot_recv_state::finish_consumer(int r, unsigned id, unsigned offset) noexcept {
  pool.sweep().unwatch(*this);
  recv_next_op* c = consumer_;
  consumer_ = nullptr;
  c->buffer_id = id;
  c->buffer_offset = offset;
  return loop_->complete_event(*c, r);
}

// One CQE of the armed request: data in one buffer or several (a bundle), the end of
// the stream, or an error.
void multishot_recv_state::on_cqe(int r, unsigned flags) noexcept {
  const bool has_buffer = (flags & IORING_CQE_F_BUFFER) != 0;
  const unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
  if (r > 0 && has_buffer) {
    if (loop_ != nullptr) loop_->state().counters.bytes_in.add(static_cast<std::uint64_t>(r));
    // Every piece is queued before anyone runs: the consumer resumed below may release
    // buffers, which refills the ring this loop reads a bundle's buffer ids from.
    const bool was_empty = head_ == queue_.size();
    pool.received(id, static_cast<std::size_t>(r), [this](unsigned bid, std::size_t offset, std::size_t n) {
      if (orphaned_) pool.give_back(bid);
      else queue_.push_back({bid, static_cast<unsigned>(offset), static_cast<int>(n)});
    });
    if (orphaned_ || consumer_ == nullptr || !was_empty) return;
    // Hand the first piece to the waiting consumer; taken off the queue first, so that
    // a next() it makes at once gets the piece after it.
    const chunk first = queue_[head_];
    ++head_;
    if (!finish_consumer(first.len, first.id, first.offset)) {
      --head_;  // the consumer was cancelled a moment ago: it stays queued (nothing ran)
    } else if (head_ == queue_.size()) {
      queue_.clear(), head_ = 0;
    }
    return;
  }
  if (has_buffer) pool.received_nothing(id, pool.bundles());  // a buffer picked for a failed receive
  if (r == -ENOBUFS) {
    if (loop_ != nullptr) ++loop_->state().counters.no_buffers;
    pool.ran_dry();   // a ring smaller than the pool grows (the re-arm then finds buffers)
    starved_ = true;  // the request ends; data waits in the socket
  } else if (r == -ECANCELED) {
    // The request ended without the receiver asking (stream_socket::cancel() cancels
    // the waiting next() itself; the kernel may also end a multishot request this
    // way): on_final() re-arms for a waiting consumer, and nothing is lost.
  } else if (r <= 0) {
    ended_ = true;
    end_res_ = r;
  }
}

// The request ended (its CQE without F_MORE).
void multishot_recv_state::on_final() noexcept {
  armed_ = false;
  if (orphaned_) {
    delete this;
    return;
  }
  if (consumer_ == nullptr || head_ < queue_.size()) return;
  if (ended_) {
    finish_consumer(end_res_, 0, 0);
  } else if (starved_ && pool.available() == 0 && !pool.detached()) {
    pool.wait_for_buffer(*this);
  } else {
    starved_ = false;  // buffers came back while the last CQEs were in flight
    arm(*loop_);       // ended without a reason (e.g. a cancel racing the consumer): re-arm
    if (ended_) finish_consumer(end_res_, 0, 0);
  }
}

void multishot_recv_state::buffers_returned() noexcept {
  starved_ = false;
  if (consumer_ != nullptr && loop_ != nullptr) {
    arm(*loop_);
    if (ended_) finish_consumer(end_res_, 0, 0);
  }
}

void multishot_recv_state::consumer_done(recv_next_op& c) noexcept {
  if (consumer_ == &c) pool.sweep().unwatch(*this);
  if (consumer_ == &c) consumer_ = nullptr;  // cancelled while waiting
}

void multishot_recv_state::detach() noexcept {
  consumer_ = nullptr;
  pool.sweep().unwatch(*this);
  pool.forget(*this);
  if (!armed_) {
    delete this;
    return;
  }
  orphaned_ = true;
  if (io_context::current() == ctx) ctx->cancel(*this);  // else the context's shutdown does
}

// The kernel picks the buffers (io_uring with a registered ring). Stays true after the
// pool is gone, so the chunks already queued are still delivered first.
bool recv_next_op::kernel_mode() const noexcept {
  io_context* c = io_context::current();
  return core->kernel_selected() && c != nullptr && c->backend() == backend_kind::uring;
}

bool recv_next_op::prepare_fallback() noexcept {
  io_context* c = io_context::current();
  if (c != nullptr && c->backend() == backend_kind::uring) {
    // A completion backend needs the buffer at submission (no buffer ring here).
    fallback.id = core->take_free();
    if (fallback.id < 0) {
      res = -ENOBUFS;
      return false;
    }
  }
  return true;
}

bool recv_next_op::take_ready() noexcept { return owner->take_ready(*this); }

bool recv_next_op::wait(bool suspended) noexcept {
  if (!suspended) return false;  // stopped before it started
  owner->wait(*this);
  return true;
}

result<pooled_buffer> recv_next_op::get_result() noexcept {
  if (use_fallback) {
    if (res == -ENOBUFS && fallback.state == op_state::idle) return unexpected(errno_code(res));
    const int id = fallback.id;
    fallback.id = -1;
    if (fallback.res <= 0) {
      if (id >= 0) core->give_back(static_cast<unsigned>(id));
      if (fallback.res < 0) return unexpected(op_error(fallback));
      return pooled_buffer{};
    }
    if (fallback.cancel_requested) {
      // RACE: the receive had the data before the cancel reached it. A cancelled next()
      // loses nothing: the chunk goes back to the receiver for the next call (when_any
      // would otherwise discard it with the losing branch).
      owner->requeue(static_cast<unsigned>(id), fallback.res);
      return unexpected(errno_code(-ECANCELED));
    }
    return pooled_buffer(core, static_cast<unsigned>(id), 0, static_cast<std::size_t>(fallback.res));
  }
  if (res < 0) return unexpected(op_error(*this));
  if (res == 0) return pooled_buffer{};
  return pooled_buffer(core, buffer_id, buffer_offset, static_cast<std::size_t>(res));
}

}  // namespace ringio::detail

namespace ringio {

multishot_receiver::multishot_receiver(stream_socket& socket, buffer_pool& pool)
    : state_(new detail::multishot_recv_state(pool.core(), socket.operation_fd())),
      core_(&pool.core()),
      fd_(socket.operation_fd()),
      direct_(socket.is_direct()),
      owner_(socket.direct_owner()) {
  state_->fixed_file = direct_;
}

multishot_receiver::~multishot_receiver() { state_->detach(); }

detail::recv_next_op multishot_receiver::next() noexcept {
  detail::recv_next_op op{state_, core_, fd_};
  op.fixed_file = direct_;  // stream_socket::cancel() matches it by kind of descriptor too
  op.fallback.fixed_file = direct_;
  op.direct_owner = owner_;  // awaited on another loop: cross_device_link
  op.fallback.direct_owner = owner_;
  return op;
}

bool multishot_receiver::next_ready(pooled_buffer& out) noexcept {
  out = pooled_buffer{};
  return state_->take_queued(out);
}

}  // namespace ringio
