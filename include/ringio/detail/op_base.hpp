// SPDX-License-Identifier: Apache-2.0
// ringio/detail/op_base.hpp — the state every asynchronous operation keeps in its
// awaiter, inside the coroutine frame. Backends see only op_base: io_uring submits it
// with user_data = &op and calls back through its op_vtable; the readiness backends
// call its attempt() until it stops returning -EAGAIN.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <new>
#include <optional>
#include <stop_token>

#include "ringio/detail/remote_item.hpp"

struct io_uring_sqe;

namespace ringio {
class io_context;
}

namespace ringio::detail {

struct offload_job;

enum class op_kind : std::uint8_t {
  io,     ///< an fd operation: prepare() for io_uring, attempt() + want for readiness
  timer,  ///< completes at deadline_ns (sleep)
  nop,    ///< completes on a later loop iteration (through the ring on io_uring)
  event,  ///< completed by other ringio code (io_context::complete_event), not a backend
};

enum class interest : std::uint8_t { none, readable, writable };

enum class op_state : std::uint8_t {
  idle,           ///< not started
  backlogged,     ///< waiting for room under the in-flight cap (io_uring)
  in_flight,      ///< owned by the backend: the kernel, a wait list or the timer heap
  completing,     ///< result known, completion queued on the loop
  done_deferred,  ///< finished, but a cross-thread cancel request still references it
  done,           ///< finished; the result is in res
};

struct op_base;

/// How a backend drives one kind of operation: one static table per operation type.
struct op_vtable {
  /// Completion backend: fill the SQE except user_data. Null for timer and nop kinds.
  void (*prepare)(op_base& op, io_uring_sqe& sqe) noexcept;
  /// Readiness backends: try the syscall now without blocking. Returns the result
  /// (>= 0 or -errno); -EAGAIN means "wait until op.want, then call again".
  int (*attempt)(op_base& op) noexcept;
  /// Multishot operations: called for every CQE; null for single-shot ones.
  void (*on_cqe)(op_base& op, int res, unsigned flags) noexcept;
  /// Multi-step operations (send_all): given a result, start the next step and return
  /// true, or return false when the operation is done. Null for single-step ones.
  bool (*step)(op_base& op) noexcept;
  /// The operation has its final result: continue whoever waits (usually: resume).
  void (*complete)(op_base& op) noexcept;
  /// Completion backend: the IORING_OP_* opcode prepare() uses when the kernel's probe
  /// may lack it (0: always present). When the probe lacks it the operation goes to the
  /// blocking pool (offload), as on the readiness backends, or runs attempt() on the loop.
  std::uint8_t optional_opcode = 0;
  /// A blocking operation (a file's): where a backend would call attempt() on the
  /// loop's thread, the loop hands it to its blocking-work pool instead; this returns
  /// the job embedded in the operation. Null: attempt() runs on the loop.
  offload_job* (*offload)(op_base& op) noexcept = nullptr;
  /// With offload: a try that never blocks (a buffered read with RWF_NOWAIT), made on
  /// the loop before the pool is asked; -EAGAIN sends the operation to the pool. Null:
  /// straight to the pool.
  int (*attempt_nowait)(op_base& op) noexcept = nullptr;
};

/// Stop callback of an operation: forwards the stop request to the operation's loop.
struct stop_canceller {
  op_base* op;
  void operator()() const noexcept;
};

/// 16-byte timespec with the kernel's layout (struct __kernel_timespec).
struct kernel_timespec {
  std::int64_t tv_sec = 0;
  long long tv_nsec = 0;
};

/// An operation's registration on a stop token.
using stop_registration = std::stop_callback<stop_canceller>;

/// Room for one stop_registration, constructed in place by op_base (whose flags say
/// which are): an std::optional would add 8 bytes of padding for its own flag.
struct stop_registration_slot {
  alignas(stop_registration) unsigned char bytes[sizeof(stop_registration)];
  stop_registration& get() noexcept { return *std::launder(reinterpret_cast<stop_registration*>(bytes)); }
};

/// Base of every operation. Not movable once started: the backend holds its address.
struct op_base {
  const op_vtable* vt = nullptr;
  op_base* next = nullptr;  ///< intrusive link: backlog or readiness wait list
  op_base* prev = nullptr;
  io_context* ctx = nullptr;
  std::coroutine_handle<> waiter;
  int res = 0;
  unsigned cqe_flags = 0;
  int fd = -1;
  op_kind kind = op_kind::io;
  interest want = interest::none;
  op_state state = op_state::idle;
  std::uint8_t outstanding = 0;     ///< CQEs still expected (io_uring)
  bool cancel_requested = false;    ///< cancellation was asked for (stop or shutdown)
  bool cancel_submitted = false;    ///< an ASYNC_CANCEL for it is in flight
  bool timed_out = false;           ///< its deadline expired (with_timeout)
  bool polling = false;             ///< uring-poll: the request in flight is a POLL_ADD
  bool drained = false;             ///< attempt(): a short stream read emptied the socket
  bool zero_copy = false;           ///< io_uring: in flight as SEND_ZC (a notification follows)
  bool zero_copy_refused = false;   ///< the socket refused SEND_ZC: send by copy from now on
  bool remote_cancel_seen = false;  ///< the loop has drained its cross-thread cancel
  bool on_pool = false;             ///< offloaded: queued or running on the blocking pool
  /// A socket read (want readable) or write (want writable) whose result is a byte
  /// count: the loop's metrics add it to bytes in or out.
  bool counts_bytes = false;
  /// io_uring: `fd` is an index in the ring's file table (IOSQE_FIXED_FILE).
  bool fixed_file = false;
  /// io_uring: the next operation started is linked after this one (IOSQE_IO_LINK);
  /// set by ringio::chain once io_context::can_link agreed.
  bool link_next = false;
  /// ringio::chain: the position of a linked operation after the first (0: none). Its
  /// SQE joins the chain only right after that of position chain_pos - 1.
  std::uint8_t chain_pos = 0;
  std::atomic<bool> remote_cancel{false};  ///< a stop callback on another thread queued it
  std::uint8_t stops_registered = 0;       ///< bit i: stop_cb[i] holds a registration
  /// With fixed_file: the loop whose file table `fd` indexes (null: not checked). An
  /// operation started on another loop fails with cross_device_link instead of doing
  /// I/O on whatever that loop's table holds in the same slot.
  io_context* direct_owner = nullptr;
  std::uint32_t heap_index = 0;  ///< position in the readiness timer heap (+1)
  /// The loop's cancel count for `fd` when the operation began, plus one (0: not
  /// tracked). A later step started after a cancel_fd() of the same fd fails at once.
  std::uint32_t fd_cancel_mark = 0;
  /// with_timeout deadline, or a timer's wake time: ns on CLOCK_MONOTONIC; 0 = none.
  std::int64_t deadline_ns = 0;
  remote_item remote;  ///< queued on the loop when a stop arrives from another thread
  /// Registrations on the tokens the operation obeys while it runs: its own and the
  /// awaiting task's (an operation given its own token, .with_stop, obeys both).
  stop_registration_slot stop_cb[2];

  op_base() noexcept = default;
  explicit op_base(const op_vtable* v, op_kind k = op_kind::io) noexcept : vt(v), kind(k) {}
  // Operations may be copied or moved only before they start (with_timeout wraps them).
  op_base(const op_base& o) noexcept
      : vt(o.vt),
        fd(o.fd),
        kind(o.kind),
        want(o.want),
        counts_bytes(o.counts_bytes),
        fixed_file(o.fixed_file),
        link_next(o.link_next),
        chain_pos(o.chain_pos),
        direct_owner(o.direct_owner),
        deadline_ns(o.deadline_ns) {}
  op_base& operator=(const op_base&) = delete;
  ~op_base() { unregister_stops(); }

  /// Obeys `t` while it runs (slot `i`, 0 or 1, must be free): a stop cancels it.
  void register_stop(unsigned i, const std::stop_token& t) noexcept {
    ::new (static_cast<void*>(stop_cb[i].bytes)) stop_registration(t, stop_canceller{this});
    stops_registered = static_cast<std::uint8_t>(stops_registered | (1U << i));
  }
  /// Ends both registrations; destroying one waits for its callback if it runs now on
  /// another thread.
  void unregister_stops() noexcept {
    for (unsigned i = 0; i < 2; ++i) {
      if ((stops_registered & (1U << i)) != 0) stop_cb[i].get().~stop_registration();
    }
    stops_registered = 0;
  }
};

/// Resumes the awaiting coroutine: the complete() of ordinary operations.
void resume_waiter(op_base& op) noexcept;

/// Starts `op` on the current thread's io_context for the coroutine `h`, obeying
/// `token` and `also` (either may be null): a stop of either cancels it. Returns false
/// when the coroutine should not suspend (the operation finished at once). Throws
/// std::logic_error outside a running context.
bool start_operation(op_base& op, std::coroutine_handle<> h, const std::stop_token* token,
                     const std::stop_token* also = nullptr);

/// Delivers the final result of `op` (called by backends): unregisters its stop
/// callback, then runs vt->complete unless a cross-thread cancel still holds it.
void finish_operation(op_base& op) noexcept;

}  // namespace ringio::detail
