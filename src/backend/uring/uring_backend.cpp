// SPDX-License-Identifier: Apache-2.0
#include "backend/uring/uring_backend.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>

#include "backend/uring/min_wait_enter.hpp"
#include "backend/uring/opcode_probe.hpp"
#include "backend/uring/ring_resize.hpp"
#include "backend/uring/uring_compat.hpp"
#include "backend/uring/zero_copy_send.hpp"
#include "core/backend_factory.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/io_context.hpp"
#include "ringio/log.hpp"

namespace ringio::detail {
namespace {

constexpr unsigned reap_batch = 128;

// io_context_options::send_bundles, unless RINGIO_SEND_BUNDLES (0 or 1) says otherwise.
bool send_bundles_wanted(const io_context_options& opts) noexcept {
  const char* env = std::getenv("RINGIO_SEND_BUNDLES");
  if (env != nullptr && (std::string_view(env) == "0" || std::string_view(env) == "1")) return *env == '1';
  return opts.send_bundles;
}

// Perturbation only (a syscall per submission): datagrams must keep their size.
bool is_stream_socket(int fd) noexcept {
  int type = 0;
  socklen_t len = sizeof type;
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

std::uint64_t tagged(op_base& op, unsigned long long tag) noexcept {
  return reinterpret_cast<std::uint64_t>(&op) | tag;
}

void to_timespec(std::int64_t ns, kernel_timespec& ts) noexcept {
  ts.tv_sec = ns / 1'000'000'000;
  ts.tv_nsec = ns % 1'000'000'000;
}

__kernel_timespec* as_kernel(kernel_timespec& ts) noexcept {
  static_assert(sizeof(kernel_timespec) == sizeof(__kernel_timespec));
  return reinterpret_cast<__kernel_timespec*>(&ts);
}

const op_vtable wake_vtable = {nullptr, nullptr, nullptr, nullptr, nullptr};

// Every live ring of the process, so that a failed ring-to-ring wake-up can fall back
// to the target's eventfd. Touched only at construction, destruction and on failure.
std::mutex registry_mutex;
std::vector<backend*> registry;

void register_ring(backend* b) {
  std::lock_guard lock(registry_mutex);
  registry.push_back(b);
}

void unregister_ring(backend* b) noexcept {
  std::lock_guard lock(registry_mutex);
  std::erase(registry, b);
}

}  // namespace

void wake_ring_by_fd(int ring_fd) noexcept {
  std::lock_guard lock(registry_mutex);
  for (backend* b : registry)
    if (b->ring_fd() == ring_fd) b->wake();
}

std::unique_ptr<backend> make_uring_backend(io_context& ctx, loop_state& st, const io_context_options& opts,
                                            bool poll_mode) {
  return std::make_unique<uring_backend>(ctx, st, opts, poll_mode);
}

uring_backend::uring_backend(io_context& ctx, loop_state& st, const io_context_options& opts, bool poll_mode)
    : ctx_(ctx), st_(st), poll_mode_(poll_mode) {
  setup_ = create_ring(ring_, opts);
  sqe_times_.resize(ring_.sq.ring_entries);
  setup_direct(opts.direct_descriptors);
  max_in_flight_opt_ = opts.max_in_flight;
  cap_ = opts.max_in_flight != 0 ? opts.max_in_flight : std::max(setup_.cq_entries, setup_.max_cq_entries);
  set_room();
  shown_sq_.store(setup_.sq_entries, std::memory_order_relaxed);
  shown_cq_.store(setup_.cq_entries, std::memory_order_relaxed);
  ring_bytes_.store(ring_mapped_bytes(ring_), std::memory_order_relaxed);
  if (!poll_mode_ && setup_.send_zc) zero_copy_threshold_ = opts.zero_copy_send_threshold;
  if (setup_.min_wait && (setup_.flags & IORING_SETUP_SQPOLL) == 0) min_wait_usec_ = opts.min_wait;
  if (!opts.no_iowait) {
    no_iowait_state_ = "off";
  } else if (setup_.no_iowait) {
    wait_flags_ = IORING_ENTER_NO_IOWAIT;
    no_iowait_state_ = "yes";
  } else {
    no_iowait_state_ = "unsupported";
  }
  if (!send_bundles_wanted(opts)) {
    send_bundle_state_ = "off";
  } else if (setup_.recv_bundle) {  // IORING_FEAT_RECVSEND_BUNDLE came with send bundles (6.10)
    send_bundles_ = true;
    send_bundle_state_ = "yes";
  } else {
    send_bundle_state_ = "unsupported";
  }
  if (!opts.futex_wake) {
    futex_wake_state_ = "eventfd";
  } else if ((setup_.flags & IORING_SETUP_SQPOLL) != 0) {
    futex_wake_state_ = "eventfd (SQPOLL)";  // not measured with a kernel thread submitting
  } else if (kernel_supports_opcode(op_futex_wait)) {
    futex_wake_ = true;
    futex_wake_state_ = "futex";
  } else {
    futex_wake_state_ = "eventfd (no FUTEX_WAIT)";
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    int err = errno;
    io_uring_queue_exit(&ring_);
    throw std::system_error(err, std::system_category(), "eventfd");
  }
  wake_.vt = &wake_vtable;
  wake_.self = this;
  arm_wake();
  register_ring(this);
}

uring_backend::~uring_backend() {
  unregister_ring(this);
  // The io_context has drained every user operation; only the wake-up read can remain.
  // Only the thread that enabled the ring can wait on it (SINGLE_ISSUER with
  // DEFER_TASKRUN: elsewhere the wait never ends); elsewhere closing the ring cancels it.
  if (enabled_ && wake_armed_ && issuer_ == std::this_thread::get_id()) {
    if (io_uring_sqe* sqe = get_sqe()) {
      io_uring_prep_cancel64(sqe, tagged(wake_, ud_tag_internal), 0);
      io_uring_sqe_set_data64(sqe, 0);
    }
    st_.shutting_down = true;  // the wake read must not re-arm
    while (wake_armed_) {
      // Completions held back by the perturbation mode are ready already: no wait then.
      int r = stash_.empty() && held_.empty() ? io_uring_submit_and_wait(&ring_, 1) : io_uring_submit(&ring_);
      if (r < 0 && r != -EINTR) break;  // e.g. destroyed on a foreign thread: the kernel cleans up
      reap();
    }
  }
  io_uring_queue_exit(&ring_);
  ::close(wake_fd_);
}

std::string uring_backend::describe() const {
  std::string s = poll_mode_ ? "uring-poll" : "uring";
  s += " (flags ";
  s += describe_setup_flags(setup_.flags & ~IORING_SETUP_R_DISABLED);
  s += ", sq " + std::to_string(shown_sq_.load(std::memory_order_relaxed)) + ", cq " +
       std::to_string(shown_cq_.load(std::memory_order_relaxed));
  s += ", max in flight " + std::to_string(cap_);
  if (const int err = resize_errno_.load(std::memory_order_relaxed); err != 0) {
    s += std::string(", ring resize failed (") + std::strerror(err) + ")";
  } else if (setup_.no_resize_reason == nullptr) {
    s += ", ring resize yes (up to sq " + std::to_string(setup_.max_sq_entries) + ", cq " +
         std::to_string(setup_.max_cq_entries) + "; " + std::to_string(resizes_.load(std::memory_order_relaxed)) +
         " resizes)";
  } else {
    s += std::string(", ring resize ") + setup_.no_resize_reason;
  }
  s += ", ring memory " + std::to_string((ring_bytes_.load(std::memory_order_relaxed) + 1023) / 1024) + " KiB";
  if (!poll_mode_) {  // what buffer_pool_options may turn on
    s += std::string(", recv bundles ") + (setup_.recv_bundle ? "yes" : "no");
    s += std::string(", incremental buffers ") + (setup_.pbuf_inc ? "yes" : "no");
    s += std::string(", send bundles ") + send_bundle_state_;
    s += std::string(", epoll wait ") + (kernel_supports_opcode(op_epoll_wait) ? "op" : "by readiness");
  }
  if (zero_copy_threshold_ != 0) s += ", zero-copy send >= " + std::to_string(zero_copy_threshold_) + " B";
  if (min_wait_usec_ != 0) s += ", min wait " + std::to_string(min_wait_usec_) + " us";
  s += std::string(", no iowait ") + no_iowait_state_;
  s += std::string(", thread wake-ups ") + futex_wake_state_;
  if (perturb_.on()) s += ", perturbed (RINGIO_PERTURB=" + std::to_string(perturb_.seed()) + ")";
  s += ", " + describe_direct() + ")";
  return s;
}

// A chain's last SQE waits, IOSQE_IO_LINK set, for its successor. If the successor
// never comes (cancelled before it started), the next SQE must not join the chain: the
// flag comes off while the SQE is still unsubmitted (a submission ends a chain anyway).
void uring_backend::end_open_link() noexcept {
  if (open_link_ == nullptr) return;
  if (open_link_at_ - ring_.sq.sqe_head < ring_.sq.sqe_tail - ring_.sq.sqe_head)
    open_link_->flags &= static_cast<__u8>(~IOSQE_IO_LINK);
  open_link_ = nullptr;
}

io_uring_sqe* uring_backend::get_sqe(bool continues_chain) noexcept {
  if (!continues_chain) end_open_link();
  open_link_ = nullptr;
  if (io_uring_sqe* sqe = io_uring_get_sqe(&ring_)) return sqe;
  free_sq(1);
  return io_uring_get_sqe(&ring_);
}

// Submits what is queued until `n` SQ slots are free. A ring that may grow doubles at
// the next poll (not here: the caller may hold an SQE already).
void uring_backend::free_sq(unsigned n) noexcept {
  sq_filled_ = true;
  if (!enabled_) {
    try {
      enable();  // full before the loop's first poll (operations start on its thread)
    } catch (const std::exception& e) {
      log(log_level::error, "%s", e.what());
      std::abort();
    }
  }
  std::int64_t stuck_since = 0;
  while (io_uring_sq_space_left(&ring_) < n) {
    const int r = io_uring_submit(&ring_);
    ++st_.stats.kernel_waits;
    ++st_.counters.kernel_waits;
    if (r == -EBUSY || r == -EAGAIN) {
      // The kernel holds back submissions until completions are reaped: take them
      // off the CQ now (they are dispatched by the next reap, in order).
      stash_completions();
    } else if ((setup_.flags & IORING_SETUP_SQPOLL) != 0) {
      // The kernel thread consumes the SQ on its own time: wait until it has (the
      // wait returns once one slot is free; a linked pair needs two).
      io_uring_sqring_wait(&ring_);
      if (io_uring_sq_space_left(&ring_) < n) std::this_thread::yield();
    }
    if (io_uring_sq_space_left(&ring_) >= n) break;
    const std::int64_t now = monotonic_ns();
    if (stuck_since == 0) {
      stuck_since = now;
    } else if (now - stuck_since > 10'000'000'000) {
      log(log_level::error, "io_uring submission queue stays full for 10 s (last submit: %d)", r);
      std::abort();
    }
  }
}

void uring_backend::stash_completions() noexcept {
  io_uring_cqe* cqes[reap_batch];
  unsigned n;
  while ((n = io_uring_peek_batch_cqe(&ring_, cqes, reap_batch)) != 0) {
    for (unsigned i = 0; i < n; ++i) stash_.push_back({cqes[i]->user_data, cqes[i]->res, cqes[i]->flags});
    io_uring_cq_advance(&ring_, n);
  }
}

bool uring_backend::runs_inline(const op_base& op) const noexcept {
  if (poll_mode_) return op.kind == op_kind::io && op.vt->attempt != nullptr;
  return op.vt->optional_opcode != 0 && !kernel_supports_opcode(op.vt->optional_opcode);
}

bool uring_backend::start(op_base& op) {
  op.outstanding = 0;
  if (op.chain_pos != 0 && (open_link_ == nullptr || open_link_pos_ + 1 != op.chain_pos)) {
    // The link before it in a ringio::chain never reached the kernel (cancelled
    // before it started): the rest of the chain is cancelled, as a failed link's is.
    op.res = -ECANCELED;
    ctx_.schedule_completion(op);
    return false;
  }
  if (poll_mode_ && op.kind == op_kind::io && op.vt->attempt != nullptr) return start_readiness(op);
  // An opcode this kernel lacks (file operations newer than the required set): the loop
  // sent it to its blocking pool (runs_inline); anything else runs its syscall now.
  if (op.vt->optional_opcode != 0 && !kernel_supports_opcode(op.vt->optional_opcode)) return start_readiness(op);
  ++user_in_flight_;
  // Room for the most an operation can post (itself, a linked timeout, a cancel); a
  // cap smaller than that still lets one operation at a time through.
  if (user_cqes() != 0 && user_cqes() + 3 > room_ && !make_room(user_cqes() + 3)) {
    // Too many CQEs could be pending: wait for completions to make room.
    if (!backlog_reported_) {
      backlog_reported_ = true;
      log(log_level::warning,
          "%zu operations in flight reached the limit (%zu); further ones wait for "
          "completions (io_context_options::max_in_flight)",
          cqes_expected_, cap_);
    }
    op.state = op_state::backlogged;
    ++st_.counters.backlog_waits;
    op.next = nullptr;
    op.prev = backlog_tail_;
    (backlog_tail_ != nullptr ? backlog_tail_->next : backlog_head_) = &op;
    backlog_tail_ = &op;
    // Its deadline (or a sleep's wake time) runs while it waits for room.
    if (op.deadline_ns != 0) backlog_deadlines_.push(op);
    return false;
  }
  submit(op);
  return false;
}

void uring_backend::unlink_backlog(op_base& op) noexcept {
  (op.prev != nullptr ? op.prev->next : backlog_head_) = op.next;
  (op.next != nullptr ? op.next->prev : backlog_tail_) = op.prev;
  op.next = op.prev = nullptr;
  backlog_deadlines_.remove(op);
}

// Backlogged operations whose time has come finish without reaching the kernel: a
// sleep with success, an operation with a deadline as timed out.
void uring_backend::expire_backlog() noexcept {
  const std::int64_t now = monotonic_ns();
  while (!backlog_deadlines_.empty() && backlog_deadlines_.top()->deadline_ns <= now) {
    op_base& op = *backlog_deadlines_.top();
    unlink_backlog(op);
    --user_in_flight_;
    if (op.kind == op_kind::timer) {
      op.res = 0;
    } else {
      op.timed_out = true;
      op.res = -ECANCELED;
    }
    ctx_.schedule_completion(op);
  }
}

bool uring_backend::start_readiness(op_base& op) {
  // Try the syscall first, as a readiness loop does; watch the fd only on EAGAIN.
  int r = op.vt->attempt(op);
  if (r != -EAGAIN) {
    op.res = r;
    if (st_.sync_budget > 0) {
      --st_.sync_budget;
      op.state = op_state::done;
      return true;
    }
    ctx_.schedule_completion(op);  // let other tasks run first
    return false;
  }
  op.polling = true;
  ++user_in_flight_;
  submit(op);
  return false;
}

void uring_backend::submit(op_base& op) noexcept {
  // A readiness wait (POLL_ADD) keeps its deadline in a heap instead of a linked
  // timeout: the poll then ends with a single CQE, so the operation can finish (and
  // give back what its attempt took) as soon as it is ready.
  if (op.polling && op.deadline_ns != 0 && op.heap_index == 0) poll_deadlines_.push(op);
  const bool linked = op.deadline_ns != 0 && op.kind != op_kind::timer && !op.polling;
  // The operation and its LINK_TIMEOUT must go in one submission: a link cut at the
  // end of one would leave the operation without its deadline (the timeout alone fails).
  if (linked && io_uring_sq_space_left(&ring_) < 2) free_sq(2);
  io_uring_sqe* sqe = get_sqe(op.chain_pos != 0);
  if (op.polling) {
    io_uring_prep_poll_add(sqe, op.fd, op.want == interest::writable ? POLLOUT : POLLIN);
  } else if (op.kind == op_kind::timer) {
    kernel_timespec& ts = timespec_for(*sqe);
    to_timespec(op.deadline_ns, ts);
    io_uring_prep_timeout(sqe, as_kernel(ts), 0, IORING_TIMEOUT_ABS);
  } else if (op.kind == op_kind::nop) {
    io_uring_prep_nop(sqe);
  } else {
    op.vt->prepare(op, *sqe);
    if (op.link_next) {  // ringio::chain: the next SQE follows it
      sqe->flags |= IOSQE_IO_LINK;
      open_link_ = sqe;
      open_link_at_ = ring_.sq.sqe_tail - 1;
      open_link_pos_ = op.chain_pos;
    }
    if (perturb_.on() && (sqe->opcode == IORING_OP_RECV || sqe->opcode == IORING_OP_SEND) &&
        (sqe->flags & IOSQE_BUFFER_SELECT) == 0 && (sqe->ioprio & IORING_RECVSEND_BUNDLE) == 0 &&
        (sqe->msg_flags & MSG_WAITALL) == 0 && !op.fixed_file && is_stream_socket(op.fd))
      sqe->len = perturb_.shorten(sqe->len);  // a short transfer, as the kernel may make
    if (op.fixed_file) use_fixed_file(*sqe);
    if (use_zero_copy_send(op, *sqe, zero_copy_threshold_)) ++st_.stats.zero_copy_sends;
  }
  io_uring_sqe_set_data64(sqe, tagged(op, ud_tag_main));
  op.state = op_state::in_flight;
  ++op.outstanding;
  ++cqes_expected_;
  if (linked) link_timeout(op, *sqe);
}

void uring_backend::link_timeout(op_base& op, io_uring_sqe& main) noexcept {
  main.flags |= IOSQE_IO_LINK;
  io_uring_sqe* sqe = get_sqe();
  kernel_timespec& ts = timespec_for(*sqe);
  to_timespec(op.deadline_ns, ts);
  io_uring_prep_link_timeout(sqe, as_kernel(ts), IORING_TIMEOUT_ABS);
  io_uring_sqe_set_data64(sqe, tagged(op, ud_tag_link));
  ++op.outstanding;
  ++cqes_expected_;
}

void uring_backend::cancel(op_base& op) noexcept {
  switch (op.state) {
    case op_state::backlogged:
      unlink_backlog(op);
      --user_in_flight_;
      op.res = -ECANCELED;
      ctx_.schedule_completion(op);
      break;
    case op_state::in_flight: {
      if (op.cancel_submitted) break;
      // The operation completes only after its own CQE and this cancel's CQE.
      io_uring_sqe* sqe = get_sqe();
      io_uring_prep_cancel64(sqe, tagged(op, ud_tag_main), 0);
      io_uring_sqe_set_data64(sqe, tagged(op, ud_tag_cancel));
      op.cancel_submitted = true;
      ++op.outstanding;
      ++cqes_expected_;
      break;
    }
    default:
      break;
  }
}

void uring_backend::cancel_all() noexcept {
  // Shutdown: sends already done stop waiting for their notifications, and no new send
  // goes out as zero copy (a notification of a finished send could then carry the
  // address of a new operation).
  shutting_down_ = true;
  zero_copy_threshold_ = 0;
  while (notif_waiting_ != nullptr) release_from_notification(*notif_waiting_);
  while (backlog_head_ != nullptr) {
    op_base* op = backlog_head_;
    unlink_backlog(*op);
    --user_in_flight_;
    op->res = -ECANCELED;
    op->cancel_requested = true;
    ctx_.schedule_completion(*op);
  }
  backlog_tail_ = nullptr;
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, 0);
}

void uring_backend::cancel_fd(int fd, bool direct) noexcept {
  // Operations still waiting for room under the cap never reached the kernel.
  for (op_base* op = backlog_head_; op != nullptr;) {
    op_base* next = op->next;
    if (op->fd == fd && op->fixed_file == direct && op->kind == op_kind::io) {
      op->cancel_requested = true;
      cancel(*op);
    }
    op = next;
  }
  // Everything the kernel holds on this fd (uring-poll: the POLL_ADDs) fails with
  // -ECANCELED; a request that already finished keeps its result.
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL | (direct ? IORING_ASYNC_CANCEL_FD_FIXED : 0));
  io_uring_sqe_set_data64(sqe, 0);
}

// The loop's thread enables the ring (created disabled so that any thread may build
// the context) at its first submission and becomes its single issuer.
void uring_backend::enable() {
  if (setup_.disabled) {
    int r = enable_rings(ring_);
    if (r < 0) throw std::system_error(-r, std::system_category(), "io_uring_enable_rings");
  }
  io_uring_register_ring_fd(&ring_);  // optional: saves a file lookup per enter
  enabled_ = true;
  issuer_ = std::this_thread::get_id();
}

// The bound start() checks: while the CQ may still grow, its current size (an
// operation past it grows the ring first); else the in-flight cap. After a failed
// resize the ring is bounded as if created at its current size (unless
// max_in_flight was given: the kernel then keeps overflowing completions, NODROP).
void uring_backend::set_room() noexcept {
  const bool failed = resize_errno_.load(std::memory_order_relaxed) != 0;
  const bool by_cq = setup_.cq_entries < setup_.max_cq_entries && (!failed || max_in_flight_opt_ == 0);
  room_ = by_cq ? std::min<std::size_t>(cap_, setup_.cq_entries) : cap_;
}

// `cqes` completions may be pending: grows the CQ until it holds them (doubling, up to
// its maximum), in one resize; the SQ keeps its size (it grows only when it fills
// within one iteration). Whether they fit under the bound now.
bool uring_backend::make_room(std::size_t cqes) noexcept {
  if (room_ < cap_ && setup_.cq_entries < setup_.max_cq_entries && resize_errno_.load(std::memory_order_relaxed) == 0) {
    unsigned cq = setup_.cq_entries;
    while (cq < cqes && cq < setup_.max_cq_entries) cq *= 2;
    grow_ring(setup_.sq_entries, std::min(cq, setup_.max_cq_entries));
  }
  return cqes <= room_;
}

// Called only where no SQE pointer is held (start, can_link, poll); the open chain link
// is found again by its position.
void uring_backend::grow_ring(unsigned sq_entries, unsigned cq_entries) noexcept {
  bool remap_failed = false;
  // RINGIO_URING_RESIZE_FAIL=ERRNO: every resize fails so (tests of the path).
  const char* fail = std::getenv("RINGIO_URING_RESIZE_FAIL");
  const int r =
      fail != nullptr ? -std::atoi(fail) : resize_ring(ring_, sq_entries, cq_entries, setup_.features, &remap_failed);
  if (remap_failed) {
    log(log_level::error, "io_uring ring resize: mapping the new rings failed: %s", std::strerror(-r));
    std::abort();
  }
  if (r < 0) {
    // The ring keeps its size and stops growing.
    resize_errno_.store(-r, std::memory_order_relaxed);
    log(log_level::warning, "io_uring ring resize to sq %u, cq %u failed (%s): the ring keeps sq %u, cq %u", sq_entries,
        cq_entries, std::strerror(-r), setup_.sq_entries, setup_.cq_entries);
    set_room();
    return;
  }
  setup_.sq_entries = ring_.sq.ring_entries;
  setup_.cq_entries = ring_.cq.ring_entries;
  if (sqe_times_.size() < ring_.sq.ring_entries) {
    try {
      std::vector<kernel_timespec> bigger(ring_.sq.ring_entries);
      retired_times_.push_back(std::move(sqe_times_));
      sqe_times_ = std::move(bigger);
    } catch (const std::bad_alloc&) {
      log(log_level::error, "io_uring ring resize: no memory for the timeouts of %u SQEs", ring_.sq.ring_entries);
      std::abort();
    }
  }
  if (open_link_ != nullptr) open_link_ = &ring_.sq.sqes[open_link_at_ & ring_.sq.ring_mask];
  shown_sq_.store(setup_.sq_entries, std::memory_order_relaxed);
  shown_cq_.store(setup_.cq_entries, std::memory_order_relaxed);
  ring_bytes_.store(ring_mapped_bytes(ring_), std::memory_order_relaxed);
  resizes_.fetch_add(1, std::memory_order_relaxed);
  set_room();
}

void uring_backend::cancel_again(op_base& op) noexcept {
  if (std::find(recancel_.begin(), recancel_.end(), &op) != recancel_.end()) return;
  try {
    recancel_.push_back(&op);
  } catch (const std::bad_alloc&) {
  }
}

// Cancels that missed their request go out again with this iteration's submission.
void uring_backend::send_cancels_again() noexcept {
  std::vector<op_base*> ops;
  ops.swap(recancel_);
  for (op_base* op : ops) {
    if (op->state != op_state::in_flight) continue;
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel64(sqe, tagged(*op, ud_tag_main), 0);
    io_uring_sqe_set_data64(sqe, tagged(*op, ud_tag_cancel));
    ++op->outstanding;
    ++cqes_expected_;
  }
}

void uring_backend::poll(bool block, std::int64_t wake_at_ns) {
  if (!enabled_) enable();
  if (sq_filled_) {  // the SQ filled within one iteration: it doubles (the CQ at least as large)
    sq_filled_ = false;
    if (setup_.sq_entries < setup_.max_sq_entries && resize_errno_.load(std::memory_order_relaxed) == 0) {
      const unsigned sq = std::min(2 * setup_.sq_entries, setup_.max_sq_entries);
      grow_ring(sq, std::min(std::max(setup_.cq_entries, sq), setup_.max_cq_entries));
    }
  }
  if (!recancel_.empty()) send_cancels_again();
  if (!stash_.empty() || !held_.empty()) block = false;  // completions taken off the CQ are ready already
  drain_backlog();
  for (const timer_heap* h : {&poll_deadlines_, &backlog_deadlines_})
    if (!h->empty() && (wake_at_ns == 0 || h->top()->deadline_ns < wake_at_ns)) wake_at_ns = h->top()->deadline_ns;
  int r;
  if (block && (min_wait_usec_ != 0 || wait_flags_ != 0)) {
    r = wait_raw(wake_at_ns);
  } else if (block && wake_at_ns != 0) {
    // Still one enter: submit and wait, bounded (IORING_ENTER_EXT_ARG).
    std::int64_t left = wake_at_ns - monotonic_ns();
    if (left < 0) left = 0;
    __kernel_timespec ts{left / 1'000'000'000, left % 1'000'000'000};
    io_uring_cqe* cqe = nullptr;
    r = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
  } else {
    r = block ? io_uring_submit_and_wait(&ring_, 1) : io_uring_submit_and_get_events(&ring_);
  }
  if (st_.timing) st_.kernel_return_ns = monotonic_ns();  // the completions that follow are run time
  ++st_.stats.kernel_waits;
  ++st_.counters.kernel_waits;
  if (r < 0) enter_failed(r);
  if (!retired_times_.empty() && io_uring_sq_ready(&ring_) == 0) retired_times_.clear();
  reap();
  if (!poll_deadlines_.empty()) expire_polls();
  if (!backlog_deadlines_.empty()) expire_backlog();
  drain_backlog();
}

// The blocking wait through our own io_uring_enter: with min-wait batching (wait for
// every user completion in flight, or min_wait_usec_, then return with what came) and
// the extra flags liburing cannot pass (wait_flags_). A wake time sooner than the min
// wait makes this an ordinary wait (the kernel would hold it until the min wait ends).
// With min wait and no wake time a long one is given: without any, the kernel ends the
// wait at the min wait even when nothing came, and an idle loop would spin.
int uring_backend::wait_raw(std::int64_t wake_at_ns) noexcept {
  constexpr std::int64_t idle_wait_ns = 3600LL * 1'000'000'000;
  std::int64_t left = -1;  // no time limit
  if (wake_at_ns != 0) {
    left = wake_at_ns - monotonic_ns();
    if (left < 0) left = 0;
  } else if (min_wait_usec_ != 0) {
    left = idle_wait_ns;
  }
  const bool batch = min_wait_usec_ != 0 && left > static_cast<std::int64_t>(min_wait_usec_) * 1000 && user_cqes() > 1;
  unsigned wait_nr = 1;
  if (batch) wait_nr = user_cqes() < setup_.cq_entries ? static_cast<unsigned>(user_cqes()) : setup_.cq_entries;
  __kernel_timespec ts{left / 1'000'000'000, left % 1'000'000'000};
  return submit_and_wait_min(ring_, wait_nr, left < 0 ? nullptr : &ts, batch ? min_wait_usec_ : 0, wait_flags_);
}

// io_uring_enter failed. Transient conditions are handled by the reap that follows:
// EINTR, ETIME (the wait timed out), EBUSY/EAGAIN (completions must be reaped before
// more submissions go in), EBADR (the kernel could not keep an overflowed completion:
// reported once; the in-flight cap exists to prevent it).
void uring_backend::enter_failed(int r) {
  switch (r) {
    case -EINTR:
    case -ETIME:
    case -EBUSY:
    case -EAGAIN:
      return;
    case -EBADR:
      ++st_.counters.cq_overflows;
      if (!overflow_reported_) {
        overflow_reported_ = true;
        log(log_level::error,
            "io_uring dropped completions on CQ overflow (raise cq_entries or "
            "lower max_in_flight)");
      }
      return;
    case -EEXIST:
      throw std::system_error(-r, std::system_category(),
                              "io_uring_enter: io_context run on a second thread (the ring is "
                              "SINGLE_ISSUER: run and destroy it on one thread)");
    default:
      throw std::system_error(-r, std::system_category(), "io_uring_enter");
  }
}

void uring_backend::flush() noexcept {
  if (enabled_ && io_uring_sq_ready(&ring_) > 0) {
    io_uring_submit(&ring_);
    ++st_.stats.kernel_waits;
    ++st_.counters.kernel_waits;
  }
}

// Readiness waits past their deadline are cancelled; the poll's CQE (-ECANCELED)
// then finishes them as timed out.
void uring_backend::expire_polls() noexcept {
  const std::int64_t now = monotonic_ns();
  while (!poll_deadlines_.empty() && poll_deadlines_.top()->deadline_ns <= now) {
    op_base& op = *poll_deadlines_.top();
    poll_deadlines_.remove(op);
    op.timed_out = true;
    cancel(op);
  }
}

// Completions are dispatched in the order the kernel posted them, per request: those
// held back by the perturbation mode first, then those a submission took off a full CQ
// (older than what the CQ holds now, even when taken during this very call), then the CQ.
void uring_backend::reap() noexcept {
  if (!held_.empty()) {
    std::vector<completion> taken;
    taken.swap(held_);
    st_.stats.completions += taken.size();
    for (const completion& c : taken) dispatch(c.ud, c.res, c.flags);
  }
  for (;;) {
    completion batch[reap_batch];
    unsigned n = 0;
    bool from_cq = false;
    if (!stash_.empty()) {
      n = stash_.size() < reap_batch ? static_cast<unsigned>(stash_.size()) : reap_batch;
      std::copy(stash_.begin(), stash_.begin() + n, batch);
      stash_.erase(stash_.begin(), stash_.begin() + n);
    } else {
      io_uring_cqe* cqes[reap_batch];
      n = io_uring_peek_batch_cqe(&ring_, cqes, reap_batch);
      if (n == 0) break;
      // Copy and release the CQ slots first: dispatch may run for a while.
      for (unsigned i = 0; i < n; ++i) batch[i] = {cqes[i]->user_data, cqes[i]->res, cqes[i]->flags};
      io_uring_cq_advance(&ring_, n);
      from_cq = true;
    }
    const unsigned taken = n;
    if (perturb_.on()) n = perturb_batch(batch, n);
    st_.stats.completions += n;
    for (unsigned i = 0; i < n; ++i) dispatch(batch[i].ud, batch[i].res, batch[i].flags);
    if (from_cq && taken < reap_batch && stash_.empty()) break;
  }
  deferred_.clear();
}

// Completions whose order the kernel keeps: those of one request, those that took
// provided buffers (posted in the order the buffers were consumed, which buffer pools
// rely on: an incremental buffer's offset, a bundle's place in the ring), and timers
// (their timeouts expire, and post, in deadline order).
std::uint64_t uring_backend::order_group(const completion& c) noexcept {
  if ((c.flags & IORING_CQE_F_BUFFER) != 0) return ~std::uint64_t{0};
  if ((c.ud & ud_tag_mask) == ud_tag_main && c.ud != 0 && c.ud != ud_wake_message && c.ud != ud_direct_install &&
      reinterpret_cast<const op_base*>(c.ud & ~static_cast<std::uint64_t>(ud_tag_mask))->kind == op_kind::timer)
    return ~std::uint64_t{1};
  return c.ud;
}

bool uring_backend::is_deferred(std::uint64_t key) const noexcept {
  return std::find(deferred_.begin(), deferred_.end(), key) != deferred_.end();
}

// Perturbation: reorders the batch (the completions of one request keep their order),
// moves some completions to the next iteration (held_; after one is held back, the
// later completions of its request are too), and returns how many stay in `batch`.
unsigned uring_backend::perturb_batch(completion* batch, unsigned n) noexcept {
  if (n > 1 && perturb_.reorders() && perturb_.one_in(2)) {
    std::uint64_t key[reap_batch];
    for (unsigned i = 0; i < n; ++i) key[i] = perturb_.below(1u << 20) * reap_batch + i;
    // A request with a buffer completion here is ordered with the buffers as a whole.
    std::uint64_t group[reap_batch];
    for (unsigned i = 0; i < n; ++i) group[i] = batch[i].ud;
    for (unsigned i = 0; i < n; ++i)
      if (order_group(batch[i]) != batch[i].ud)
        for (unsigned j = 0; j < n; ++j)
          if (batch[j].ud == batch[i].ud) group[j] = order_group(batch[i]);
    // Same order group: its keys, sorted, are handed out again in arrival order.
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = i + 1; j < n; ++j)
        if (group[j] == group[i] && key[j] < key[i]) std::swap(key[i], key[j]);
    unsigned order[reap_batch];
    for (unsigned i = 0; i < n; ++i) order[i] = i;
    std::sort(order, order + n, [&](unsigned a, unsigned b) { return key[a] < key[b]; });
    completion copy[reap_batch];
    for (unsigned i = 0; i < n; ++i) copy[i] = batch[order[i]];
    std::copy(copy, copy + n, batch);
  }
  const bool defers = perturb_.defers();
  const unsigned split = defers && perturb_.one_in(6) ? static_cast<unsigned>(perturb_.below(n)) : n;
  unsigned kept = 0;
  for (unsigned i = 0; i < n; ++i) {
    const completion c = batch[i];
    const bool hold = i >= split || (defers && perturb_.one_in(8)) || is_deferred(c.ud) || is_deferred(order_group(c));
    if (hold) {
      try {
        held_.push_back(c);
        deferred_.push_back(c.ud);  // its request, and the buffers when it took one
        deferred_.push_back(order_group(c));
        continue;
      } catch (const std::bad_alloc&) {
      }
    }
    if ((c.flags & IORING_CQE_F_MORE) != 0 && perturb_.ends_multishot() && perturb_.one_in(32))
      end_multishot_now(c.ud, c.flags);
    batch[kept++] = c;
  }
  return kept;
}

// Perturbation: ends a multishot request with a cancel nobody asked for, as the kernel
// may (its final completion then carries -ECANCELED). The request is still live (this
// completion has F_MORE), so no other request can hold its user_data.
void uring_backend::end_multishot_now(std::uint64_t ud, unsigned flags) noexcept {
  if ((ud & ud_tag_mask) != ud_tag_main || (flags & IORING_CQE_F_NOTIF) != 0 || ud == ud_wake_message) return;
  auto* op = reinterpret_cast<op_base*>(ud & ~static_cast<std::uint64_t>(ud_tag_mask));
  if (op == nullptr || op == &wake_ || op->vt == nullptr || op->vt->on_cqe == nullptr) return;
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_cancel64(sqe, ud, 0);
  io_uring_sqe_set_data64(sqe, 0);
}

void uring_backend::dispatch(std::uint64_t ud, int res, unsigned flags) noexcept {
  // 0: a request nobody waits for (cancel-all, fire-and-forget). A wake message from
  // another loop needs no action: the inbox is drained after every poll.
  if (ud == ud_wake_message) {
    ++st_.stats.message_wakes;
    ++st_.counters.wakeups;
  }
  if (ud == 0 || ud == ud_wake_message || ud == ud_direct_install) return;
  if ((ud & ud_tag_mask) == ud_tag_wake_failed) {
    // The message could not be posted (e.g. the target ring was not enabled yet):
    // wake the target through its eventfd instead, or the wake-up is lost.
    wake_ring_by_fd(static_cast<int>(ud >> 3));
    return;
  }
  auto* op = reinterpret_cast<op_base*>(ud & ~static_cast<std::uint64_t>(ud_tag_mask));
  const bool final_cqe = (flags & IORING_CQE_F_MORE) == 0;
  if (final_cqe) --cqes_expected_;
  if ((flags & IORING_CQE_F_NOTIF) != 0 && !orphans_.empty() && orphaned_notification(ud)) return;
  // The kernel's restart codes (-ERESTARTSYS..-ERESTART_RESTARTBLOCK) leak out of a
  // request that a cancel interrupted in an io-wq worker (a blocked open of a FIFO):
  // nothing else produces them, so they are a cancellation.
  if (res <= -512 && res >= -516) res = -ECANCELED;
  switch (ud & ud_tag_mask) {
    case ud_tag_main:
      if (op->vt->on_cqe != nullptr) {  // multishot: every CQE is delivered
        op->vt->on_cqe(*op, res, flags);
        if (!final_cqe) return;
        op->res = res;
      } else if (op->polling) {
        op->polling = false;
        --op->outstanding;
        on_poll_cqe(*op, res);
        if (op->outstanding == 0) {
          poll_deadlines_.remove(*op);
          finish(*op);
        }
        return;
      } else if ((flags & IORING_CQE_F_NOTIF) != 0) {
        // A zero-copy send's notification: the kernel let go of the buffer.
        if ((res & IORING_NOTIF_USAGE_ZC_COPIED) != 0) ++st_.stats.zero_copy_copied;
        unlink_notif_wait(*op);
      } else {
        // A timer's expiry is its success.
        op->res = (op->kind == op_kind::timer && res == -ETIME) ? 0 : res;
        op->cqe_flags = flags;
        if (!final_cqe) {  // a zero-copy send: wait for its notification
          wait_for_notification(*op);
          return;
        }
      }
      break;
    case ud_tag_cancel:
      // RACE: the kernel did not find the request (-ENOENT) or could not stop it now
      // (-EALREADY) while its completion is still to come: it was between a wake-up and
      // its retry (the retry may wait again). Asked again at the next iteration.
      if ((res == -ENOENT || res == -EALREADY) && op->outstanding > 1) cancel_again(*op);
      break;
    case ud_tag_link:
      // -ETIME: the deadline passed and cancelled the operation. Some operations'
      // cancel paths (WAITID, 6.7) report how many they cancelled instead: 1.
      if (res == -ETIME || res > 0) {
        op->timed_out = true;
      } else if ((res == -ENOENT || res == -EALREADY) && op->outstanding > 1) {
        op->timed_out = true;  // the deadline passed; its cancel missed (as above)
        cancel_again(*op);
      }
      break;
    case ud_tag_internal:
      op->res = res;
      wake_complete(*op);
      return;
    default:
      return;
  }
  if (--op->outstanding == 0) finish(*op);
}

void uring_backend::wait_for_notification(op_base& op) noexcept {
  op.prev = nullptr;
  op.next = notif_waiting_;
  if (notif_waiting_ != nullptr) notif_waiting_->prev = &op;
  notif_waiting_ = &op;
  if (shutting_down_) release_from_notification(op);
}

void uring_backend::unlink_notif_wait(op_base& op) noexcept {
  if (op.prev == nullptr && notif_waiting_ != &op) return;  // not waiting
  (op.prev != nullptr ? op.prev->next : notif_waiting_) = op.next;
  if (op.next != nullptr) op.next->prev = op.prev;
  op.next = op.prev = nullptr;
}

// RACE: the notification may still come; it is recognised by its user_data and
// dropped. The kernel holds its own references to the pages until the bytes leave, so
// the buffer's memory may be reused: at worst the bytes still queued on a connection
// being torn down reflect the later writes.
void uring_backend::release_from_notification(op_base& op) noexcept {
  unlink_notif_wait(op);
  try {
    orphans_.push_back(tagged(op, ud_tag_main));
  } catch (const std::bad_alloc&) {
    return;  // keep waiting: the notification will finish it
  }
  if (--op.outstanding == 0) finish(op);
}

bool uring_backend::orphaned_notification(std::uint64_t ud) noexcept {
  for (std::size_t i = 0; i < orphans_.size(); ++i) {
    if (orphans_[i] != ud) continue;
    orphans_[i] = orphans_.back();
    orphans_.pop_back();
    return true;
  }
  return false;
}

void uring_backend::on_poll_cqe(op_base& op, int res) noexcept {
  if (res < 0) {
    op.res = res;  // -ECANCELED (stop or deadline) or an error of the poll itself
    return;
  }
  int r = op.vt->attempt(op);
  if (r == -EAGAIN) {
    if (!op.cancel_requested && !op.timed_out) {
      op.polling = true;  // spurious readiness: watch again
      submit(op);
      return;
    }
    r = -ECANCELED;
  }
  op.res = r;  // RACE: a stop that lost to readiness still delivers the real result
}

void uring_backend::finish(op_base& op) noexcept {
  if (op.zero_copy && retry_without_zero_copy(op)) {
    submit(op);
    return;
  }
  if (!recancel_.empty()) std::erase(recancel_, &op);
  poll_deadlines_.remove(op);  // whichever of its CQEs came last
  --user_in_flight_;
  finish_operation(op);
}

void uring_backend::drain_backlog() noexcept {
  while (backlog_head_ != nullptr && (user_cqes() == 0 || user_cqes() + 3 <= room_)) {
    op_base* op = backlog_head_;
    unlink_backlog(*op);
    submit(*op);
  }
}

int uring_backend::register_buffer_ring(void* ring_addr, unsigned entries, bool incremental) noexcept {
  if (poll_mode_) return -EOPNOTSUPP;  // uring-poll does its own recv: no kernel selection
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uint64_t>(ring_addr);
  reg.ring_entries = entries;
  // Groups are 16 bits: those given back (a writer's send ring per connection) are used
  // again before new ones.
  const bool reuse = !free_buffer_groups_.empty();
  if (!reuse && next_buffer_group_ > 0xffff) return -ENOSPC;
  reg.bgid = reuse ? free_buffer_groups_.back() : static_cast<__u16>(next_buffer_group_);
  if (incremental) set_buf_reg_flags(reg, IOU_PBUF_RING_INC);
  int r = io_uring_register_buf_ring(&ring_, &reg, 0);
  if (r < 0) return r;
  if (reuse) {
    free_buffer_groups_.pop_back();
    return reg.bgid;
  }
  return static_cast<int>(next_buffer_group_++);
}

void uring_backend::unregister_buffer_ring(int group) noexcept {
  if (io_uring_unregister_buf_ring(&ring_, group) != 0) return;
  try {
    free_buffer_groups_.push_back(static_cast<unsigned short>(group));
  } catch (const std::bad_alloc&) {
    // the group is not used again: one of 65,536 lost
  }
}

namespace {
bool breaks_links_on_failure(int opcode) noexcept {
  switch (opcode) {
    case IORING_OP_READ:
    case IORING_OP_WRITE:
    case IORING_OP_READV:
    case IORING_OP_WRITEV:
    case IORING_OP_READ_FIXED:
    case IORING_OP_WRITE_FIXED:
    case IORING_OP_OPENAT2:
      return true;
    default:
      return false;
  }
}
}  // namespace

bool uring_backend::can_link(op_base* const* ops, std::size_t n) noexcept {
  if (poll_mode_ || !enabled_) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const op_base& op = *ops[i];
    if (op.kind != op_kind::io || op.vt->prepare == nullptr || op.vt->on_cqe != nullptr || op.vt->step != nullptr ||
        op.fixed_file)
      return false;
    if (op.vt->optional_opcode != 0 && !kernel_supports_opcode(op.vt->optional_opcode)) return false;
    // Linux (6.18) cancels the links after a failed read, write or open (and after a
    // short transfer), but runs them after a failed fsync, fallocate, ftruncate, statx
    // or path operation: a link that must stop the chain has to be one of the former.
    if (i + 1 < n && !breaks_links_on_failure(op.vt->optional_opcode)) return false;
  }
  // Each link posts at most its own CQE and a cancel's; none may wait in the backlog.
  if (backlog_head_ != nullptr || (user_cqes() + 3 * n > room_ && !make_room(user_cqes() + 3 * n))) return false;
  // The chain's SQEs must go in one submission: a partial chain would run unlinked.
  if (io_uring_sq_space_left(&ring_) < n) io_uring_submit(&ring_);
  return io_uring_sq_space_left(&ring_) >= n;
}

int uring_backend::register_buffers(const iovec* buffers, unsigned count) noexcept {
  if (poll_mode_) return 0;  // uring-poll reads with pread: nothing to register
  return io_uring_register_buffers(&ring_, buffers, count);
}

void uring_backend::unregister_buffers() noexcept {
  if (!poll_mode_) io_uring_unregister_buffers(&ring_);
}

unsigned uring_backend::buffer_ring_features() const noexcept {
  if (poll_mode_) return 0;
  return (setup_.recv_bundle ? feature_recv_bundle : 0u) | (setup_.pbuf_inc ? feature_incremental : 0u) |
         (send_bundles_ ? feature_send_bundle : 0u);
}

bool uring_backend::send_wake(int target_ring_fd) noexcept {
  if (!enabled_ || !setup_.msg_ring) return false;  // a running loop's next submit sends it
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_msg_ring(sqe, target_ring_fd, 0, ud_wake_message, 0);
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;  // no CQE here unless it fails
  io_uring_sqe_set_data64(sqe, (static_cast<std::uint64_t>(target_ring_fd) << 3) | ud_tag_wake_failed);
  return true;
}

void uring_backend::wake() noexcept {
  if (futex_wake_) {
    // Only the first waker since the loop last took a wake-up calls into the kernel.
    // A shared futex, not a private one: from Linux 6.16 a process's private futexes
    // move to a hash of its own as it makes threads, and an io_uring wait armed on a
    // private futex before such a move is never found by a later FUTEX_WAKE_PRIVATE
    // (CrossThread.AThreadMadeWhileTheLoopSleepsWakesItWithAPost).
    if (wake_word_.exchange(1, std::memory_order_acq_rel) == 0)
      ::syscall(SYS_futex, &wake_word_, FUTEX_WAKE, 1, nullptr, nullptr, 0);
    return;
  }
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void uring_backend::arm_wake() noexcept {
  if (min_wait_usec_ != 0 && io_uring_sq_space_left(&ring_) < 2) io_uring_submit(&ring_);
  io_uring_sqe* sqe = get_sqe();
  if (futex_wake_) {
    // Sleeps while the word is 0; a word already 1 completes it at once (-EAGAIN).
    io_uring_prep_rw(op_futex_wait, sqe, static_cast<int>(futex2_size_u32), &wake_word_, 0, 0);  // shared: see wake()
    sqe->addr3 = FUTEX_BITSET_MATCH_ANY;
  } else {
    io_uring_prep_read(sqe, wake_fd_, &wake_.value, sizeof wake_.value, static_cast<__u64>(-1));
  }
  io_uring_sqe_set_data64(sqe, tagged(wake_, ud_tag_internal));
  ++cqes_expected_;
  wake_armed_ = true;
  if (min_wait_usec_ != 0) {
    // A completed TIMEOUT ends a min wait at once, an ordinary CQE does not: a post
    // from another thread is followed by a TIMEOUT that expires immediately (a hard
    // link: a futex wait that finds the word set already fails with -EAGAIN).
    sqe->flags |= futex_wake_ ? IOSQE_IO_HARDLINK : IOSQE_IO_LINK;
    io_uring_sqe* nudge = get_sqe();
    io_uring_prep_timeout(nudge, as_kernel(wake_nudge_ts_), 0, 0);
    io_uring_sqe_set_data64(nudge, 0);
  }
}

void uring_backend::wake_complete(op_base& op) noexcept {
  auto& w = static_cast<wake_op&>(op);
  // Futex: woken (0) or the word was set before the wait began (-EAGAIN); take it back
  // to 0 before the wait is armed again, so the next waker calls FUTEX_WAKE.
  if (w.self->futex_wake_ && (op.res == 0 || op.res == -EAGAIN)) {
    w.self->wake_word_.store(0, std::memory_order_release);
    op.res = 1;
  }
  if (op.res > 0) {
    ++w.self->st_.stats.eventfd_wakes;
    ++w.self->st_.counters.wakeups;
  }
  w.self->wake_armed_ = false;
  if (!w.self->st_.shutting_down) w.self->arm_wake();
}

}  // namespace ringio::detail
