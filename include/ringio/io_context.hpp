// SPDX-License-Identifier: Apache-2.0
// ringio/io_context.hpp — the per-thread event loop. One io_context per thread, never
// shared: its ring (or epoll set) is used only by the thread that runs it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

struct iovec;

#include "ringio/backend_kind.hpp"
#include "ringio/blocking/blocking_pool_options.hpp"
#include "ringio/detail/context_service.hpp"
#include "ringio/loop_metrics.hpp"
#include "ringio/task.hpp"

namespace ringio {

namespace detail {
class backend;
class timer_heap;
class loop_state;
struct op_base;
struct remote_item;
struct foreign_wait;
}  // namespace detail

/// How an io_context sets up its backend. Every field has a default.
struct io_context_options {
  /// nullopt: RINGIO_BACKEND from the environment if set, else io_uring with an
  /// automatic fall back to epoll (one line on stderr says why).
  std::optional<backend_kind> backend{};
  /// Submission queue entries (io_uring backends; at least 2 are used, since an
  /// operation with a deadline goes in with its linked timeout). With ring_resize, the
  /// most the SQ grows to.
  unsigned sq_entries = 4096;
  /// Completion queue entries; 0 picks 65536 (the kernel's maximum), so that one
  /// thread can keep tens of thousands of operations in flight without overflow. With
  /// ring_resize, the most the CQ grows to.
  unsigned cq_entries = 0;
  /// Start the ring small (256 SQ, 1,024 CQ entries, at most the sizes above) and grow
  /// it in place as operations in flight need more room (`IORING_REGISTER_RESIZE_RINGS`,
  /// Linux 6.13): the SQ and CQ double, up to sq_entries and cq_entries, when the
  /// completions that may be pending would no longer fit the CQ or the SQ filled within
  /// one loop iteration. An idle loop's ring then maps 40 KiB instead of 1.3 MiB. Needs
  /// DEFER_TASKRUN (so not with SQPOLL); elsewhere, on older kernels and when off, the
  /// ring has its full size from the start. describe() says which, with the current
  /// sizes and the ring's memory. Measured in docs/performance.md ("Kernel features").
  bool ring_resize = true;
  /// Upper bound of pending completions; beyond it operations wait in a backlog until
  /// completions make room (one line on stderr says so the first time). 0: the CQ
  /// size, so the CQ can never overflow. Operations that wait long (reads on idle
  /// connections) hold their slot: a thread serving more idle connections than this
  /// starves new work, so raise it above the CQ size for such servers; the kernel
  /// then keeps overflowing completions in its own list (IORING_FEAT_NODROP).
  unsigned max_in_flight = 0;
  /// Use IORING_SETUP_SQPOLL (a kernel thread polls the SQ; costs a core).
  bool sqpoll = false;
  /// Ask for IORING_SETUP_DEFER_TASKRUN (completion work runs only when this loop
  /// enters the kernel to wait). Off: COOP_TASKRUN alone. Measured here (docs/
  /// performance.md): HTTP keep-alive with 1,000 connections had a lower p99 without
  /// it; echo and ping/pong showed no difference outside the noise.
  bool defer_taskrun = true;
  /// Do not print the fall-back warning.
  bool quiet = false;
  /// Slots of a sparse file table registered with the ring for direct descriptors
  /// (io_uring completion backend; 0: none). Accepts on a listener with
  /// listen_options::direct_descriptors set fill it (IORING_FILE_INDEX_ALLOC), and the
  /// sockets they return skip the kernel's per-operation file lookup. Capped at
  /// RLIMIT_NOFILE (the kernel's bound for a table). Ignored (no table: normal
  /// descriptors everywhere) on the epoll and uring-poll backends, on kernels without
  /// IORING_OP_FIXED_FD_INSTALL (6.8) or when the registration fails; describe() says
  /// which.
  unsigned direct_descriptors = 0;
  /// Share the kernel's async worker pool with this context's ring
  /// (IORING_SETUP_ATTACH_WQ); must use an io_uring backend too.
  const class io_context* attach_wq_of = nullptr;
  /// Sends (send, send_all) of at least this many bytes use `IORING_OP_SEND_ZC`: the
  /// kernel sends from the caller's buffer instead of copying it, and the operation
  /// completes only once the kernel's notification says it no longer reads the buffer,
  /// so the buffer may be reused as soon as the awaiting task resumes. That includes a
  /// send that a stop or deadline cut short: its completion also waits for the
  /// notification, which for bytes still queued in the socket can mean until the peer
  /// reads them or the socket is closed. The context's shutdown (its destructor) does not
  /// wait for notifications: sends that have their result complete at once, and bytes
  /// still queued may then reflect later writes to their buffer (the kernel keeps the
  /// pages themselves alive). A socket that refuses zero copy (AF_UNIX) is
  /// sent to by copy. Gather sends (`sendmsg(2)`) are not converted. 0 (the default):
  /// off. Ignored by the readiness backends (epoll, uring-poll) and by kernels without
  /// the opcode; describe() says whether it is on. Measured on loopback, where the
  /// kernel copies anyway, it never won (docs/performance.md, "Zero-copy send").
  std::size_t zero_copy_send_threshold = 0;
  /// Minimum wait in microseconds before a blocking io_uring wait returns with fewer
  /// completions than are in flight (`min_wait_usec` of `io_uring_enter(2)`, Linux
  /// 6.12, IORING_FEAT_MIN_TIMEOUT): the loop sleeps up to this long collecting
  /// completions into one batch, then returns with whatever arrived; with none, it
  /// waits on for the first. Sleeps and posts from threads outside ringio still end
  /// the wait at once; completions (with_timeout deadlines included) and wake-ups
  /// from other loops may be seen up to this much later. 0 (the default): off.
  /// Ignored by the readiness backends, with SQPOLL, and by older kernels; describe()
  /// says whether it is on.
  unsigned min_wait = 0;
  /// Keep the loop's sleeps in the kernel out of the CPU's I/O wait time
  /// (`IORING_ENTER_NO_IOWAIT`, Linux 6.15): without it a loop waiting in io_uring_enter
  /// with operations in flight (its wake-up read always is) counts as a task in I/O
  /// wait, so an idle server shows as "iowait" in top and /proc/stat and raises the
  /// CPU frequency governor's I/O-wait boost. Measured here it cost no throughput
  /// (docs/performance.md, "Kernel features"). Ignored by the readiness backends and
  /// by older kernels; describe() says whether it is on.
  bool no_iowait = true;
  /// Wake-ups from threads outside ringio (post, event::set, channel sends, stop())
  /// wake the sleeping loop through an `IORING_OP_FUTEX_WAIT` (Linux 6.7) kept in its
  /// ring and `futex(FUTEX_WAKE)`, instead of a read of an eventfd and `write(2)`.
  /// Wake-ups from other io_uring loops still travel as ring messages (MSG_RING).
  /// io_uring backends only; ignored with SQPOLL and by older kernels; describe() says
  /// which is used ("thread wake-ups futex" or "eventfd").
  /// Measured in docs/performance.md ("Kernel features"): 2–4% less CPU per
  /// cross-thread round trip, within the noise of a shared machine, so off by default.
  bool futex_wake = false;
  /// Busy polling, in microseconds (0, the default: off). For this long after the loop
  /// last found a completion it does not sleep when it has nothing to run: each pass
  /// asks the kernel for completions without waiting (one io_uring_enter, or an
  /// epoll_wait with no timeout). A completion that comes meanwhile then needs no
  /// wake-up of the loop's thread, which costs the thread that completes it (a peer
  /// on the same machine, the kernel's network processing) part of its time. The
  /// price: the loop's CPU stays busy for up to this long after every completion, so
  /// a loop with steady traffic uses a whole core. For a core given to the loop, with
  /// the peer's CPU as the limit (docs/performance.md, "Busy polling"). The three real
  /// backends; ignored by the sim backend (its clock moves when the loop would sleep).
  /// describe() shows it when on.
  unsigned busy_poll = 0;
  /// A batching_writer sends each pass as one send bundle (`IORING_OP_SEND` with
  /// `IORING_RECVSEND_BUNDLE`, Linux 6.10) from a provided-buffer ring of its own whose
  /// entries point at the queued messages, instead of one `sendmsg(2)`: the kernel
  /// reads the ring in place rather than copying a msghdr and an iovec array. Costs
  /// each running writer a registered ring (one 4 KiB page, registered when run()
  /// starts and removed when it ends). RINGIO_SEND_BUNDLES=0 or 1 in the environment
  /// overrides it. Ignored by the readiness backends and by older kernels (IORING_FEAT_
  /// RECVSEND_BUNDLE); describe() says `send bundles yes`, `off` or `unsupported`.
  /// Measured in docs/performance.md ("Kernel features").
  bool send_bundles = false;
  /// Measure the time the loop sleeps in the kernel and how long it runs between two
  /// calls into the kernel (loop_metrics::asleep_ns and the stall histogram): two
  /// CLOCK_MONOTONIC reads per loop iteration. The counters of loop_metrics are kept
  /// either way. RINGIO_LOOP_TIMING=0 in the environment turns it off too.
  bool loop_timing = true;
  /// Threads and queue bound of the context's default blocking_pool (spawn_blocking),
  /// made on its first use.
  blocking_pool_options blocking{};
};

/// Counters of one loop (updated by its thread; read them on that thread or after it
/// stopped).
struct loop_statistics {
  std::uint64_t iterations = 0;        ///< loop iterations (run what is ready, poll once)
  std::uint64_t kernel_waits = 0;      ///< io_uring_enter / epoll_wait calls by the loop
  std::uint64_t completions = 0;       ///< CQEs reaped, or readiness events handled
  std::uint64_t message_wakes = 0;     ///< wake-ups received as ring-to-ring messages
  std::uint64_t eventfd_wakes = 0;     ///< wake-ups received through the eventfd (or futex)
  std::uint64_t zero_copy_sends = 0;   ///< sends submitted as `IORING_OP_SEND_ZC`
  std::uint64_t zero_copy_copied = 0;  ///< of those, sends the kernel copied anyway
};

/// A single-threaded event loop over io_uring or epoll. Operations (recv, accept,
/// sleep, ...) awaited by tasks running on this thread are submitted to it.
///
/// Construction throws std::system_error when the requested backend cannot start
/// (the message names the missing feature or the failing call).
class io_context {
 public:
  /// Sets up the backend (see io_context_options). Throws std::system_error when it
  /// cannot start; an automatic choice falls back to epoll instead.
  explicit io_context(io_context_options opts = {});
  /// Cancels every operation in flight and runs the loop until all of them have
  /// completed (their coroutines see operation_canceled). A task waiting in spawn_on
  /// has its child stopped and is resumed when the child has finished on its own
  /// loop, which must therefore keep running (or be destroyed). Destroy a context on the
  /// thread that ran it: on another thread nothing can be drained and suspended
  /// tasks are abandoned (with a warning on stderr).
  ~io_context();
  io_context(const io_context&) = delete;
  io_context& operator=(const io_context&) = delete;

  /// Runs the loop on the calling thread until stop() is called. A stop() that
  /// arrives before run() makes the next run() return at once; run() consumes it.
  void run();

  /// Runs until no task is runnable and no operation is in flight (or stop()).
  void run_until_idle();

  /// Asks run() to return. Safe from any thread and from signal-free contexts.
  void stop() noexcept;

  /// Starts `t` on this context; the context owns it. Safe only on the loop's thread
  /// or before the loop runs. Exceptions escaping `t` terminate the program.
  void spawn(task<void> t);

  /// The backend this context runs on.
  [[nodiscard]] backend_kind backend() const noexcept { return kind_; }
  /// One line describing the backend and its setup (flags, sizes).
  [[nodiscard]] std::string describe() const;

  /// The io_context running on this thread, or nullptr.
  [[nodiscard]] static io_context* current() noexcept;

  /// The loop's counters.
  [[nodiscard]] const loop_statistics& stats() const noexcept;

  /// True while the loop ends: its destructor (or a runtime's stop()) cancels what is in
  /// flight and runs the tasks that this resumes. On the loop's thread.
  [[nodiscard]] bool shutting_down() const noexcept;

  /// A copy of the loop's metrics, safe to take from any thread while the loop runs
  /// (each field is read atomically; fields are not read at one single instant).
  [[nodiscard]] loop_metrics metrics() const noexcept;

  /// @cond INTERNAL
  /// Fibers of this loop not finished (ringio::fiber counts them, on the loop thread).
  void fiber_began() noexcept {
    fibers_alive_.store(fibers_alive_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void fiber_ended() noexcept {
    fibers_alive_.store(fibers_alive_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
  /// @endcond

  /// The io_uring file descriptor, or -1 on the epoll backend.
  [[nodiscard]] int ring_fd() const noexcept;

  /// Registers `count` buffers (an iovec array) with the ring for file::read_fixed_at
  /// and write_fixed_at, which name them by index: the kernel pins their pages once
  /// instead of per I/O. The memory must outlive the registration. Replaces nothing:
  /// unregister_buffers() first to register another set. 0, or -errno (EBUSY: a set is
  /// registered; ENOMEM: over RLIMIT_MEMLOCK on old kernels). The readiness backends
  /// (and uring-poll) have nothing to register: 0, and fixed I/O is plain pread/pwrite.
  /// Loop thread, or before the loop runs.
  int register_buffers(const iovec* buffers, unsigned count) noexcept;
  /// Removes the buffers register_buffers() registered, when no fixed I/O is in flight.
  void unregister_buffers() noexcept;

  /// Number of operations the backend or the blocking pool holds right now (not
  /// counting ringio's own requests, nor operations waiting for events of other tasks).
  [[nodiscard]] std::size_t in_flight() const noexcept;

  // ---- used by operations and the runtime (not for applications) ----
  /// @cond INTERNAL
  /// Starts an operation. Returns true when it finished synchronously (op.res is set).
  bool start(detail::op_base& op);
  /// Requests cancellation of a started operation (loop thread only). The operation
  /// still completes through its normal path, later.
  void cancel(detail::op_base& op) noexcept;
  /// Cancels every operation of this loop on `fd` (loop thread only), or on slot `fd`
  /// of the ring's file table when `direct`; each completes later through its normal path.
  void cancel_fd(int fd, bool direct = false) noexcept;
  /// How many cancel_fd() calls `fd` has seen on this loop, plus one (op_base::fd_cancel_mark).
  [[nodiscard]] std::uint32_t cancel_mark(int fd, bool direct) const noexcept;
  /// Direct descriptors (the ring's file table): its size, 0 when off; free slots;
  /// counting a slot taken or given back; closing one (loop thread); installing one as
  /// a normal descriptor (loop thread, synchronous: the fd or -errno).
  [[nodiscard]] unsigned direct_table_size() const noexcept;
  [[nodiscard]] unsigned direct_free() const noexcept;
  void direct_reserve() noexcept;
  void direct_unreserve() noexcept;
  void close_direct(int index) noexcept;
  int install_direct(int index) noexcept;
  /// Whether `n` operations can be submitted now as one io_uring link chain (ringio::chain).
  bool can_link(detail::op_base* const* ops, std::size_t n) noexcept;
  /// Completes an operation of kind event that is waiting; false if it is not.
  bool complete_event(detail::op_base& op, int res) noexcept;
  /// The same, but the completion runs from the ready queue, not inside this call.
  bool complete_event_later(detail::op_base& op, int res) noexcept;
  /// Provided-buffer rings (buffer_pool): group id or -errno (with IOU_PBUF_RING_INC
  /// when `incremental`); its removal; the optional features the kernel offers
  /// (detail::buffer_ring_feature bits).
  int register_buffer_ring(void* ring_addr, unsigned entries, bool incremental = false) noexcept;
  [[nodiscard]] unsigned buffer_ring_features() const noexcept;
  void unregister_buffer_ring(int group) noexcept;
  /// Queues a coroutine to be resumed by the loop.
  void schedule(std::coroutine_handle<> h);
  /// Queues an operation whose result is already set; the loop finishes it.
  void schedule_completion(detail::op_base& op);
  /// A task of this loop waits for a child on another loop (loop thread only).
  void add_foreign_wait(detail::foreign_wait& w) noexcept;
  void remove_foreign_wait(detail::foreign_wait& w) noexcept;
  /// Work of this loop handed to another thread (a name lookup), counted from its
  /// start to the delivery of its answer on the loop (loop thread only). A simulated
  /// loop lets virtual time run at real speed while any is pending.
  void outside_work_began() noexcept { ++outside_work_; }
  void outside_work_ended() noexcept { --outside_work_; }
  /// Whether a task waits for another thread (spawn_on, outside work).
  [[nodiscard]] bool waits_outside() const noexcept { return foreign_ != nullptr || outside_work_ != 0; }
  /// What the destructor does first, ahead of it: cancels everything in flight and runs
  /// until all of it has completed; the context stays usable for posts (they run when
  /// it is destroyed). For code that must end several loops before freeing any.
  void shut_down() noexcept { shutdown(); }
  /// Cancels every event operation waiting on this loop (a channel receive, an event or
  /// mutex wait...): each completes with operation_canceled (loop thread only).
  void cancel_waiting_events() noexcept;
  /// Whether work handed to another thread is pending (outside_work_began()).
  [[nodiscard]] bool outside_work_pending() const noexcept { return outside_work_ != 0; }
  /// Calls op.vt->complete(op) on the loop once CLOCK_MONOTONIC passes op.deadline_ns
  /// (loop thread only). Not an operation in flight: it keeps no loop running and
  /// never delays shutdown; remove it with cancel_check before `op` goes away.
  void schedule_check(detail::op_base& op);
  void cancel_check(detail::op_base& op) noexcept;
  /// The context's one instance of T (a detail::context_service constructible from
  /// io_context&), created on first use (loop thread only). ~io_context destroys it
  /// after the last task and before the backend, newest first.
  template <class T>
  T& service() {
    static const char key = 0;
    if (detail::context_service* s = find_service(&key)) return static_cast<T&>(*s);
    auto fresh = std::make_unique<T>(*this);
    T& ref = *fresh;
    add_service(&key, std::move(fresh));
    return ref;
  }
  /// Pushes an item to be run on the loop's thread; safe from any thread.
  void post_remote(detail::remote_item& item) noexcept;
  /// Runs, now, the items of the inbox whose run function is `run`; the others stay
  /// queued (loop thread). For a module that stops posting as the context is destroyed.
  void drain_posts(void (*run)(detail::remote_item&, io_context&) noexcept) noexcept;
  /// io_context_options::blocking as given.
  [[nodiscard]] const blocking_pool_options& blocking_options() const noexcept { return blocking_options_; }
  /// The loop's internal state (backends use it; not part of the API).
  detail::loop_state& state() noexcept { return *state_; }
  /// Runs the loop until done(arg) returns true (stop() does not interrupt it).
  void run_until(bool (*done)(void*), void* arg);
  /// True on the thread currently running this context.
  [[nodiscard]] bool on_loop_thread() const noexcept { return current() == this; }
  /// @endcond

 private:
  friend class runtime;  // ends a loop's operations (shutdown) before its last metrics

  void run_ready();
  void poll_backend(bool stoppable);
  template <class Done>
  void loop(Done done, bool stoppable);
  [[nodiscard]] bool idle() const noexcept;
  bool take_event(detail::op_base& op) noexcept;
  bool start_offloaded(detail::op_base& op);
  bool cancel_offloaded(detail::op_base& op) noexcept;
  void unlink_offloaded(detail::op_base& op) noexcept;
  static void offload_back(detail::remote_item& item, io_context& ctx) noexcept;
  void drain_remote() noexcept;
  void wake_from(io_context* sender) noexcept;
  void shutdown() noexcept;
  detail::context_service* find_service(const void* key) const noexcept;
  void add_service(const void* key, std::unique_ptr<detail::context_service> s);

  backend_kind kind_;
  std::unique_ptr<detail::loop_state> state_;
  std::unique_ptr<detail::backend> backend_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<std::uint64_t> fibers_alive_{0};
  std::thread::id owner_;                    // the thread that first ran the loop
  detail::op_base* events_ = nullptr;        // waiting event operations (intrusive list)
  detail::foreign_wait* foreign_ = nullptr;  // tasks parked in spawn_on (intrusive list)
  std::size_t events_waiting_ = 0;
  detail::op_base* offloaded_ = nullptr;  // operations on the blocking pool (intrusive list)
  std::size_t offloaded_waiting_ = 0;
  std::size_t outside_work_ = 0;
  std::unique_ptr<detail::timer_heap> event_deadlines_;  // events waiting with a deadline
  std::unique_ptr<detail::timer_heap> checks_;           // schedule_check callbacks
  void expire_events() noexcept;
  void run_checks() noexcept;
  struct service_entry {
    const void* key;
    std::unique_ptr<detail::context_service> object;
  };
  std::vector<service_entry> services_;  // see service()
  blocking_pool_options blocking_options_;
};

}  // namespace ringio
