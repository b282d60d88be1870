// SPDX-License-Identifier: Apache-2.0
// uring_backend — the completion backend: operations become SQEs whose user_data is the
// operation itself; CQEs are reaped in batches and dispatched through the op_vtable.
// In uring-poll mode the ring only watches fds (POLL_ADD) and the operation performs
// its own syscall, like a readiness loop.
#pragma once

#include <liburing.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "backend/uring/uring_setup.hpp"
#include "core/backend.hpp"
#include "core/loop_state.hpp"
#include "core/perturbation.hpp"
#include "core/timer_heap.hpp"

namespace ringio::detail {

/// Wakes the loop whose ring is `ring_fd` through its eventfd, if it still exists.
void wake_ring_by_fd(int ring_fd) noexcept;

class uring_backend final : public backend {
 public:
  uring_backend(io_context& ctx, loop_state& st, const io_context_options& opts, bool poll_mode);
  ~uring_backend() override;

  bool start(op_base& op) override;
  [[nodiscard]] bool runs_inline(const op_base& op) const noexcept override;
  void cancel(op_base& op) noexcept override;
  void poll(bool block, std::int64_t wake_at_ns) override;
  void wake() noexcept override;
  void cancel_all() noexcept override;
  void cancel_fd(int fd, bool direct) noexcept override;
  void flush() noexcept override;
  [[nodiscard]] std::size_t in_flight() const noexcept override { return user_in_flight_; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] int ring_fd() const noexcept override { return ring_.ring_fd; }
  bool send_wake(int ring_fd) noexcept override;
  int register_buffer_ring(void* ring_addr, unsigned entries, bool incremental) noexcept override;
  [[nodiscard]] unsigned buffer_ring_features() const noexcept override;
  void unregister_buffer_ring(int group) noexcept override;
  int register_buffers(const iovec* buffers, unsigned count) noexcept override;
  bool can_link(op_base* const* ops, std::size_t n) noexcept override;
  void unregister_buffers() noexcept override;
  [[nodiscard]] unsigned direct_table_size() const noexcept override { return direct_size_; }
  [[nodiscard]] unsigned direct_free() const noexcept override {
    return direct_used_ < direct_size_ ? direct_size_ - direct_used_ : 0;
  }
  void direct_reserve() noexcept override { ++direct_used_; }
  void direct_unreserve() noexcept override { --direct_used_; }
  void close_direct(int index) noexcept override;
  int install_direct(int index) noexcept override;

 private:
  struct wake_op : op_base {
    std::uint64_t value = 0;
    uring_backend* self = nullptr;
  };

  struct completion {
    std::uint64_t ud;
    int res;
    unsigned flags;
  };

  void enable();
  bool make_room(std::size_t cqes) noexcept;
  void grow_ring(unsigned sq_entries, unsigned cq_entries) noexcept;
  void set_room() noexcept;
  int wait_raw(std::int64_t wake_at_ns) noexcept;
  /// A free SQE. `continues_chain`: it is the successor of the open chain link (if any).
  io_uring_sqe* get_sqe(bool continues_chain = false) noexcept;
  void free_sq(unsigned n) noexcept;
  void end_open_link() noexcept;
  void stash_completions() noexcept;
  void enter_failed(int r);
  void expire_backlog() noexcept;
  void unlink_backlog(op_base& op) noexcept;
  [[nodiscard]] std::size_t user_cqes() const noexcept { return cqes_expected_ - (wake_armed_ ? 1 : 0); }
  void submit(op_base& op) noexcept;
  void link_timeout(op_base& op, io_uring_sqe& main) noexcept;
  bool start_readiness(op_base& op);
  void on_poll_cqe(op_base& op, int res) noexcept;
  void dispatch(std::uint64_t ud, int res, unsigned flags) noexcept;
  void reap() noexcept;
  unsigned perturb_batch(completion* batch, unsigned n) noexcept;
  static std::uint64_t order_group(const completion& c) noexcept;
  [[nodiscard]] bool is_deferred(std::uint64_t key) const noexcept;
  void end_multishot_now(std::uint64_t ud, unsigned flags) noexcept;
  void drain_backlog() noexcept;
  void finish(op_base& op) noexcept;
  void cancel_again(op_base& op) noexcept;
  void send_cancels_again() noexcept;
  void wait_for_notification(op_base& op) noexcept;
  void release_from_notification(op_base& op) noexcept;
  void unlink_notif_wait(op_base& op) noexcept;
  bool orphaned_notification(std::uint64_t ud) noexcept;
  void arm_wake() noexcept;
  void expire_polls() noexcept;
  static void wake_complete(op_base& op) noexcept;
  // Direct descriptors (uring_direct.cpp).
  void setup_direct(unsigned wanted) noexcept;
  [[nodiscard]] std::string describe_direct() const;
  static void use_fixed_file(io_uring_sqe& sqe) noexcept;

  io_context& ctx_;
  loop_state& st_;
  io_uring ring_{};
  ring_setup setup_;
  bool poll_mode_;
  bool enabled_ = false;
  io_uring_sqe* open_link_ = nullptr;  ///< ringio::chain: the unsubmitted SQE waiting for its link
  unsigned open_link_at_ = 0;          ///< its index in the SQ (sqe_tail when it was taken, minus one)
  unsigned open_link_pos_ = 0;         ///< its op_base::chain_pos
  std::thread::id issuer_;             // the thread that enabled the ring
  std::size_t cqes_expected_ = 0;      // every request that will post a CQE
  std::size_t user_in_flight_ = 0;     // user operations started and not finished
  std::size_t cap_ = 0;
  // Ring resize: what start() checks on every operation is `room_` (the CQ's current
  // size while it may still grow, else cap_); past it make_room() grows the ring.
  std::size_t room_ = 0;
  std::size_t max_in_flight_opt_ = 0;  // io_context_options::max_in_flight
  bool sq_filled_ = false;             // the SQ filled since the last poll: grow it then
  // What describe() shows of a ring that may grow, kept where another thread may read
  // it while the loop grows the ring (the server apps describe loop 0 once it runs).
  std::atomic<unsigned> shown_sq_{0}, shown_cq_{0};
  std::atomic<std::size_t> ring_bytes_{0};
  std::atomic<unsigned> resizes_{0};
  std::atomic<int> resize_errno_{0};  // a resize failed (the ring then keeps its size)
  op_base* backlog_head_ = nullptr;
  op_base* backlog_tail_ = nullptr;
  int wake_fd_ = -1;
  // Futex wake-ups (IORING_OP_FUTEX_WAIT on wake_word_ instead of the eventfd read):
  // wake() sets the word to 1 and calls FUTEX_WAKE when it was 0.
  bool futex_wake_ = false;
  const char* futex_wake_state_ = "eventfd";
  std::atomic<std::uint32_t> wake_word_{0};
  wake_op wake_;
  bool wake_armed_ = false;
  bool backlog_reported_ = false;
  unsigned next_buffer_group_ = 0;
  std::vector<unsigned short> free_buffer_groups_;  // unregistered, to be used again
  bool send_bundles_ = false;                       // io_context_options::send_bundles, supported
  const char* send_bundle_state_ = "off";
  timer_heap poll_deadlines_;      // uring-poll: readiness waits with a deadline
  timer_heap backlog_deadlines_;   // backlogged operations with a deadline (or wake time)
  std::vector<completion> stash_;  // CQEs taken off a full CQ to let a submit through
  bool overflow_reported_ = false;
  unsigned direct_size_ = 0;  // slots of the sparse file table (0: direct descriptors off)
  unsigned direct_used_ = 0;  // slots taken or reserved by an accept in flight
  const char* direct_off_reason_ = "not asked for";
  // Zero-copy sends and min-wait batching (io_context_options; 0 = off or unsupported).
  std::size_t zero_copy_threshold_ = 0;
  unsigned min_wait_usec_ = 0;
  unsigned wait_flags_ = 0;  // extra io_uring_enter flags of a blocking wait (IORING_ENTER_NO_IOWAIT)
  const char* no_iowait_state_ = "off";
  // The timespec each SQE slot's TIMEOUT or LINK_TIMEOUT points to: the kernel reads it
  // when it consumes the SQE, before the slot can be filled again (so an operation need
  // not carry one).
  std::vector<kernel_timespec> sqe_times_;
  // After the SQ grows, the SQEs queued before point into the old array until the
  // kernel consumes them (a new slot may share an old one's index): kept until then.
  std::vector<std::vector<kernel_timespec>> retired_times_;
  kernel_timespec& timespec_for(const io_uring_sqe& sqe) noexcept {
    const auto slot =
        static_cast<std::size_t>(&sqe - ring_.sq.sqes) >> ((ring_.flags & IORING_SETUP_SQE128) != 0 ? 1 : 0);
    return sqe_times_[slot];
  }
  kernel_timespec wake_nudge_ts_{};  // 0: the wake read's linked TIMEOUT expires at once
  // Zero-copy sends that have their result and wait for the kernel to let go of the
  // buffer (linked through op.next/prev). At shutdown they finish without it: a peer
  // that stopped reading would otherwise hold the context forever. Their notifications
  // (user_data in `orphans_`) are then dropped when they come.
  op_base* notif_waiting_ = nullptr;
  std::vector<std::uint64_t> orphans_;
  bool shutting_down_ = false;
  std::vector<op_base*> recancel_;       // operations whose cancel missed (sent again next poll)
  perturbation perturb_;                 // RINGIO_PERTURB: a seeded test mode (off by default)
  std::vector<completion> held_;         // perturbation: completions for the next iteration
  std::vector<std::uint64_t> deferred_;  // perturbation: requests with a completion held back
};

}  // namespace ringio::detail
