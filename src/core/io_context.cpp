// SPDX-License-Identifier: Apache-2.0
// io_context: picks a backend, runs the loop, shuts down cleanly.
#include "ringio/io_context.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/backend.hpp"
#include "core/backend_factory.hpp"
#include "core/current_context.hpp"
#include "core/loop_state.hpp"
#include "core/timer_heap.hpp"
#include "ringio/blocking/blocking_pool.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/detail/foreign_wait.hpp"
#include "ringio/detail/offload_job.hpp"
#include "ringio/log.hpp"
#include "ringio/sim/world.hpp"

namespace ringio {
namespace {

thread_local io_context* current_context = nullptr;

// Makes `ctx` the thread's current context for a scope (nesting restores the outer).
class current_scope {
 public:
  explicit current_scope(io_context* ctx) noexcept : saved_(current_context) { current_context = ctx; }
  ~current_scope() { current_context = saved_; }
  current_scope(const current_scope&) = delete;
  current_scope& operator=(const current_scope&) = delete;

 private:
  io_context* saved_;
};

std::atomic<bool> fallback_reported{false};

// Counts a call from any thread into a context for the duration of a scope.
class foreign_call {
 public:
  explicit foreign_call(std::atomic<int>& n) noexcept : n_(n) { n_.fetch_add(1, std::memory_order_acq_rel); }
  ~foreign_call() { n_.fetch_sub(1, std::memory_order_acq_rel); }
  foreign_call(const foreign_call&) = delete;
  foreign_call& operator=(const foreign_call&) = delete;

 private:
  std::atomic<int>& n_;
};

struct backend_choice {
  backend_kind kind;
  bool forced;
  const char* origin;
};

backend_choice choose_backend(const io_context_options& opts) {
  if (opts.backend) return {*opts.backend, true, "io_context_options"};
  if (const char* env = std::getenv("RINGIO_BACKEND"); env != nullptr && *env != '\0') {
    auto k = parse_backend(env);
    if (!k)
      throw std::invalid_argument(std::string("RINGIO_BACKEND: unknown backend '") + env +
                                  "' (expected uring, epoll, uring-poll or sim)");
    return {*k, true, "RINGIO_BACKEND"};
  }
  return {backend_kind::uring, false, "default"};
}

// io_context_options::loop_timing, unless RINGIO_LOOP_TIMING=0 turns it off.
bool loop_timing_enabled(const io_context_options& opts) {
  const char* env = std::getenv("RINGIO_LOOP_TIMING");
  return opts.loop_timing && !(env != nullptr && std::string_view(env) == "0");
}

}  // namespace

namespace detail {
io_context* exchange_current_context(io_context* ctx) noexcept { return std::exchange(current_context, ctx); }
}  // namespace detail

std::string_view to_string(backend_kind k) noexcept {
  switch (k) {
    case backend_kind::uring:
      return "uring";
    case backend_kind::epoll:
      return "epoll";
    case backend_kind::uring_poll:
      return "uring-poll";
    case backend_kind::sim:
      return "sim";
  }
  return "unknown";
}

std::optional<backend_kind> parse_backend(std::string_view name) noexcept {
  if (name == "uring") return backend_kind::uring;
  if (name == "epoll") return backend_kind::epoll;
  if (name == "uring-poll") return backend_kind::uring_poll;
  if (name == "sim") return backend_kind::sim;
  return std::nullopt;
}

io_context::io_context(io_context_options opts)
    : state_(std::make_unique<detail::loop_state>()),
      event_deadlines_(std::make_unique<detail::timer_heap>()),
      checks_(std::make_unique<detail::timer_heap>()) {
  state_->timing = loop_timing_enabled(opts);
  blocking_options_ = opts.blocking;
  backend_choice choice = choose_backend(opts);
  kind_ = choice.kind;
  if (kind_ == backend_kind::sim) {
    backend_ = detail::make_sim_backend(*this, *state_, opts);
    return;
  }
  // Not for the sim backend: there a pass that finds nothing to do is what moves
  // simulated time on, so a loop that never sleeps would stop the clock.
  state_->busy_poll_ns = static_cast<std::int64_t>(opts.busy_poll) * 1000;
  if (sim::world::current() != nullptr) {
    // Its sockets are simulated: only the sim backend can drive them.
    throw std::logic_error(std::string("ringio: backend ") + std::string(to_string(kind_)) +
                           " on a thread with a sim::world (use backend_kind::sim)");
  }
  if (kind_ == backend_kind::epoll) {
    backend_ = detail::make_epoll_backend(*this, *state_, opts);
    return;
  }
  try {
    backend_ = detail::make_uring_backend(*this, *state_, opts, kind_ == backend_kind::uring_poll);
  } catch (const detail::backend_setup_error& e) {
    if (choice.forced) {
      throw detail::backend_setup_error(e.code(), std::string("ringio: backend ") + std::string(to_string(kind_)) +
                                                      " (forced by " + choice.origin + ") cannot start: " + e.what());
    }
    if (!opts.quiet && !fallback_reported.exchange(true))
      log(log_level::warning, "io_uring unavailable (%s); falling back to epoll", e.what());
    kind_ = backend_kind::epoll;
    backend_ = detail::make_epoll_backend(*this, *state_, opts);
  }
}

io_context::~io_context() {
  shutdown();
  while (state_->foreign_calls.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  // Services may still need the ring (a buffer pool unregisters its ring): newest first.
  current_scope cs(this);
  while (!services_.empty()) services_.pop_back();
}

detail::context_service* io_context::find_service(const void* key) const noexcept {
  for (const service_entry& e : services_)
    if (e.key == key) return e.object.get();
  return nullptr;
}

void io_context::add_service(const void* key, std::unique_ptr<detail::context_service> s) {
  services_.push_back({key, std::move(s)});
}

io_context* io_context::current() noexcept { return current_context; }

std::string io_context::describe() const {
  std::string s = backend_->describe();
  if (state_->busy_poll_ns != 0) s += ", busy poll " + std::to_string(state_->busy_poll_ns / 1000) + " us";
  return s;
}

const loop_statistics& io_context::stats() const noexcept { return state_->stats; }

loop_metrics io_context::metrics() const noexcept {
  loop_metrics m = state_->counters.snapshot();
  m.fibers_alive = fibers_alive_.load(std::memory_order_relaxed);
  return m;
}

int io_context::ring_fd() const noexcept { return backend_->ring_fd(); }

std::size_t io_context::in_flight() const noexcept { return backend_->in_flight() + offloaded_waiting_; }

bool io_context::start(detail::op_base& op) {
  // RACE: a stop callback on another thread reads op.ctx while a multi-step operation
  // starts its next step here; the value never changes, so it is written only once.
  if (op.ctx != this) op.ctx = this;
  if (op.fd_cancel_mark != 0 && op.kind == detail::op_kind::io &&
      op.fd_cancel_mark != state_->cancel_mark(op.fd, op.fixed_file))
    op.cancel_requested = true;  // RACE: its fd was cancelled after the last step completed
  ++state_->counters.ops_started[static_cast<std::size_t>(op.kind)];
  if (state_->shutting_down || op.cancel_requested) {
    op.res = -ECANCELED;
    op.state = detail::op_state::done;
    state_->counters.note_result(op);
    return true;
  }
  if (op.kind == detail::op_kind::event) {
    // Waits in a list of the loop's own until complete_event() or a cancel.
    op.state = detail::op_state::in_flight;
    op.prev = nullptr;
    op.next = events_;
    if (events_ != nullptr) events_->prev = &op;
    events_ = &op;
    ++events_waiting_;
    // An event has no kernel request to link a timeout to: the loop watches its deadline.
    if (op.deadline_ns != 0) event_deadlines_->push(op);
    return false;
  }
  if (op.vt->offload != nullptr && !op.fixed_file && backend_->runs_inline(op)) {
    if (!start_offloaded(op)) return false;
  } else if (!backend_->start(op)) {
    return false;
  }
  state_->counters.note_result(op);  // finished synchronously
  return true;
}

// A blocking operation goes to the loop's pool; the operation completes when its job is
// back (offload_back), never before: the syscall may still use its buffers until then.
bool io_context::start_offloaded(detail::op_base& op) {
  // A result known now finishes synchronously while the loop's budget lasts, else
  // through the ready queue so that other tasks get a turn (as the backends do).
  auto known_now = [&](int r) {
    op.res = r;
    if (state_->sync_budget > 0) {
      --state_->sync_budget;
      op.state = detail::op_state::done;
      return true;
    }
    schedule_completion(op);
    return false;
  };
  if (op.vt->attempt_nowait != nullptr) {
    int r = op.vt->attempt_nowait(op);  // a page-cache hit needs no thread
    if (r != -EAGAIN) return known_now(r);
  }
  detail::offload_job& job = *op.vt->offload(op);
  job.op = &op;
  if (!detail::submit_offload(*this, job, &offload_back))
    return known_now(op.vt->attempt(op));  // the pool's queue is full: here, as without a pool
  op.on_pool = true;
  op.state = detail::op_state::in_flight;
  op.prev = nullptr;
  op.next = offloaded_;
  if (offloaded_ != nullptr) offloaded_->prev = &op;
  offloaded_ = &op;
  ++offloaded_waiting_;
  if (op.deadline_ns != 0) event_deadlines_->push(op);
  return false;
}

void io_context::unlink_offloaded(detail::op_base& op) noexcept {
  (op.prev != nullptr ? op.prev->next : offloaded_) = op.next;
  if (op.next != nullptr) op.next->prev = op.prev;
  op.next = op.prev = nullptr;
  op.on_pool = false;
  --offloaded_waiting_;
  event_deadlines_->remove(op);
}

// A stop or deadline: a job not yet started is taken back and the operation completes
// with -ECANCELED (true); a running one is left to finish, and the operation completes
// with the syscall's result when it is back.
bool io_context::cancel_offloaded(detail::op_base& op) noexcept {
  detail::offload_job& job = *op.vt->offload(op);
  if (!job.pool->withdraw(job)) {
    event_deadlines_->remove(op);  // nothing left for a deadline to do
    return false;
  }
  unlink_offloaded(op);
  op.res = -ECANCELED;
  schedule_completion(op);
  return true;
}

void io_context::offload_back(detail::remote_item& item, io_context& ctx) noexcept {
  auto& job = *static_cast<detail::offload_job*>(item.arg);
  detail::op_base& op = *job.op;
  ctx.unlink_offloaded(op);
  op.res = job.pool_cancelled ? -ECANCELED : job.result;  // the pool went away before it ran
  ctx.schedule_completion(op);
}

bool io_context::take_event(detail::op_base& op) noexcept {
  if (op.state != detail::op_state::in_flight) return false;
  (op.prev != nullptr ? op.prev->next : events_) = op.next;
  if (op.next != nullptr) op.next->prev = op.prev;
  op.next = op.prev = nullptr;
  --events_waiting_;
  event_deadlines_->remove(op);
  return true;
}

// Events whose deadline passed complete with timed_out (like a linked timeout).
void io_context::expire_events() noexcept {
  const std::int64_t now = detail::monotonic_ns();
  while (!event_deadlines_->empty() && event_deadlines_->top()->deadline_ns <= now) {
    detail::op_base& op = *event_deadlines_->top();
    if (op.on_pool) {
      if (cancel_offloaded(op)) op.timed_out = true;
      continue;
    }
    take_event(op);
    op.timed_out = true;
    op.res = -ECANCELED;
    schedule_completion(op);
  }
}

void io_context::run_checks() noexcept {
  const std::int64_t now = detail::monotonic_ns();
  while (!checks_->empty() && checks_->top()->deadline_ns <= now) {
    detail::op_base& op = *checks_->top();
    checks_->remove(op);
    op.vt->complete(op);
  }
}

bool io_context::complete_event(detail::op_base& op, int res) noexcept {
  if (!take_event(op)) return false;
  op.res = res;
  detail::finish_operation(op);
  return true;
}

bool io_context::complete_event_later(detail::op_base& op, int res) noexcept {
  if (!take_event(op)) return false;
  op.res = res;
  schedule_completion(op);
  return true;
}

void io_context::cancel_waiting_events() noexcept {
  while (events_ != nullptr) cancel(*events_);
}

void io_context::cancel(detail::op_base& op) noexcept {
  op.cancel_requested = true;
  if (op.kind == detail::op_kind::event) {
    complete_event_later(op, -ECANCELED);
    return;
  }
  if (op.on_pool) {
    (void)cancel_offloaded(op);
    return;
  }
  backend_->cancel(op);
}

void io_context::cancel_fd(int fd, bool direct) noexcept {
  try {
    state_->note_cancel(fd, direct);
  } catch (const std::bad_alloc&) {
    log(log_level::error, "cancel of fd %d: no memory to record it; a later step may still start", fd);
  }
  // Waits that no kernel request stands for (a multishot receiver's or acceptor's
  // next(), even one paused for lack of buffers) are cancelled here.
  for (detail::op_base* op = events_; op != nullptr;) {
    detail::op_base* next = op->next;
    if (op->fd == fd && op->fixed_file == direct) cancel(*op);
    op = next;
  }
  backend_->cancel_fd(fd, direct);
}

std::uint32_t io_context::cancel_mark(int fd, bool direct) const noexcept { return state_->cancel_mark(fd, direct); }

unsigned io_context::direct_table_size() const noexcept { return backend_->direct_table_size(); }
unsigned io_context::direct_free() const noexcept { return backend_->direct_free(); }
void io_context::direct_reserve() noexcept { backend_->direct_reserve(); }
void io_context::direct_unreserve() noexcept { backend_->direct_unreserve(); }
void io_context::close_direct(int index) noexcept { backend_->close_direct(index); }
int io_context::install_direct(int index) noexcept { return backend_->install_direct(index); }

int io_context::register_buffer_ring(void* ring_addr, unsigned entries, bool incremental) noexcept {
  return backend_->register_buffer_ring(ring_addr, entries, incremental);
}
unsigned io_context::buffer_ring_features() const noexcept { return backend_->buffer_ring_features(); }
void io_context::unregister_buffer_ring(int group) noexcept { backend_->unregister_buffer_ring(group); }

bool io_context::can_link(detail::op_base* const* ops, std::size_t n) noexcept { return backend_->can_link(ops, n); }

int io_context::register_buffers(const iovec* buffers, unsigned count) noexcept {
  return backend_->register_buffers(buffers, count);
}

void io_context::unregister_buffers() noexcept { backend_->unregister_buffers(); }

void io_context::schedule(std::coroutine_handle<> h) { state_->ready.push(h); }

void io_context::schedule_completion(detail::op_base& op) {
  op.state = detail::op_state::completing;
  state_->ready.push(op);
}

void io_context::add_foreign_wait(detail::foreign_wait& w) noexcept {
  w.prev = nullptr;
  w.next = foreign_;
  if (foreign_ != nullptr) foreign_->prev = &w;
  foreign_ = &w;
  if (state_->shutting_down) w.child_stop->request_stop();
}

void io_context::remove_foreign_wait(detail::foreign_wait& w) noexcept {
  (w.prev != nullptr ? w.prev->next : foreign_) = w.next;
  if (w.next != nullptr) w.next->prev = w.prev;
  w.next = w.prev = nullptr;
}

void io_context::schedule_check(detail::op_base& op) {
  checks_->remove(op);
  checks_->push(op);
}

void io_context::cancel_check(detail::op_base& op) noexcept { checks_->remove(op); }

void io_context::post_remote(detail::remote_item& item) noexcept {
  foreign_call guard(state_->foreign_calls);
  detail::remote_item* head = state_->inbox.load(std::memory_order_relaxed);
  do {
    item.next = head;
  } while (!state_->inbox.compare_exchange_weak(head, &item, std::memory_order_release, std::memory_order_relaxed));
  if (state_->sleeping.exchange(false)) wake_from(current());
}

// Wakes this sleeping loop: from another io_uring loop by a ring-to-ring message,
// otherwise through the backend's eventfd.
void io_context::wake_from(io_context* sender) noexcept {
  int target = backend_->ring_fd();
  if (sender != nullptr && sender != this && target >= 0 && sender->backend_->send_wake(target)) return;
  backend_->wake();
}

void io_context::stop() noexcept {
  foreign_call guard(state_->foreign_calls);
  stop_requested_.store(true);
  if (state_->sleeping.exchange(false)) wake_from(current());
}

void io_context::spawn(task<void> t) {
  auto h = t.release();
  h.promise().set_sink(&state_->detached);
  ++state_->detached_tasks;
  ++state_->counters.tasks_alive;
  state_->ready.push(h);
}

// Runs what is ready: the coroutines and completions queued when the batch started.
void io_context::run_ready() {
  detail::loop_state& st = *state_;
  st.sync_budget = detail::loop_state::sync_budget_per_iteration;
  for (std::size_t n = st.ready.size(); n > 0 && !st.ready.empty(); --n) {
    detail::ready_queue::entry e = st.ready.pop();
    if (e.is_op) detail::finish_operation(*static_cast<detail::op_base*>(e.ptr));
    else detail::resume_flat(std::coroutine_handle<>::from_address(e.ptr));
  }
}

// One trip to the kernel: submit, wait if nothing else is runnable, dispatch.
void io_context::poll_backend(bool stoppable) {
  detail::loop_state& st = *state_;
  bool block = st.ready.empty();
  // Busy polling: shortly after a completion the loop asks the kernel for more without
  // sleeping, so that the next one needs no wake-up (of this thread, paid partly by
  // whoever completes it); an idle loop sleeps again after busy_poll.
  const std::uint64_t results_before = st.counters.results;
  if (block && st.busy_poll_ns != 0 && detail::monotonic_ns() - st.busy_since_ns < st.busy_poll_ns) block = false;
  if (block) {
    // Announce the sleep, then look again: a post or stop that raced with us either
    // sees sleeping == true (and wakes us) or is seen here.
    st.sleeping.store(true);
    if (st.inbox.load() != nullptr || (stoppable && stop_requested_.load())) block = false;
  }
  std::int64_t wake_at = event_deadlines_->empty() ? 0 : event_deadlines_->top()->deadline_ns;
  if (!checks_->empty() && (wake_at == 0 || checks_->top()->deadline_ns < wake_at))
    wake_at = checks_->top()->deadline_ns;
  if (st.timing) {
    // From the last return out of the kernel to this call: how long the loop ran.
    const std::int64_t before = detail::monotonic_ns();
    if (st.last_return_ns != 0) st.counters.note_stall(before - st.last_return_ns);
    st.kernel_return_ns = 0;
    backend_->poll(block, wake_at);
    st.last_return_ns = st.kernel_return_ns != 0 ? st.kernel_return_ns : detail::monotonic_ns();
    if (block) st.counters.asleep_ns.add(static_cast<std::uint64_t>(st.last_return_ns - before));
  } else {
    backend_->poll(block, wake_at);
  }
  st.sleeping.store(false, std::memory_order_relaxed);
  if (!event_deadlines_->empty()) expire_events();
  if (!checks_->empty()) run_checks();
  if (st.inbox.load(std::memory_order_acquire) != nullptr) drain_remote();
  // Found work: results (run as they are reaped, or queued) or posts made ready.
  if (st.busy_poll_ns != 0 && (st.counters.results != results_before || !st.ready.empty()))
    st.busy_since_ns = detail::monotonic_ns();
}

template <class Done>
void io_context::loop(Done done, bool stoppable) {
  if (owner_ == std::thread::id{}) owner_ = std::this_thread::get_id();
  // Whatever the last iteration queued (a wake-up message for another loop among
  // it) goes to the kernel before the loop returns: it may not run again soon.
  struct flush_on_exit {
    detail::backend& b;
    detail::loop_state& st;
    ~flush_on_exit() {
      b.flush();
      // The run that ends with the loop (a task finishing a sync_wait) is a run too;
      // the time until the loop is entered again is not.
      if (st.timing && st.last_return_ns != 0) {
        st.counters.note_stall(detail::monotonic_ns() - st.last_return_ns);
        st.last_return_ns = 0;
      }
    }
  } flush{*backend_, *state_};
  // Entering the loop starts a run: what runs before its first trip to the kernel (a
  // task spawned before run()) holds the loop as much as what a completion resumes.
  if (state_->timing && state_->last_return_ns == 0) state_->last_return_ns = detail::monotonic_ns();
  for (;;) {
    if (done()) return;
    run_ready();
    if (done()) return;
    poll_backend(stoppable);
    ++state_->stats.iterations;
    ++state_->counters.iterations;
  }
}

bool io_context::idle() const noexcept {
  return state_->ready.empty() && backend_->in_flight() == 0 && events_waiting_ == 0 && offloaded_waiting_ == 0 &&
         foreign_ == nullptr && state_->inbox.load(std::memory_order_acquire) == nullptr;
}

void io_context::drain_remote() noexcept {
  detail::remote_item* list = state_->inbox.exchange(nullptr, std::memory_order_acquire);
  detail::remote_item* fifo = nullptr;  // the stack is newest-first; reverse it
  while (list != nullptr) {
    detail::remote_item* next = list->next;
    list->next = fifo;
    fifo = list;
    list = next;
  }
  while (fifo != nullptr) {
    detail::remote_item* next = fifo->next;
    ++state_->counters.posts_received;
    fifo->run(*fifo, *this);
    fifo = next;
  }
}

void io_context::drain_posts(void (*run)(detail::remote_item&, io_context&) noexcept) noexcept {
  detail::remote_item* list = state_->inbox.exchange(nullptr, std::memory_order_acquire);
  detail::remote_item* others = nullptr;  // oldest first
  detail::remote_item* mine = nullptr;    // oldest first
  while (list != nullptr) {
    detail::remote_item* next = list->next;
    detail::remote_item*& to = list->run == run ? mine : others;
    list->next = to;
    to = list;
    list = next;
  }
  while (others != nullptr) {  // back onto the stack, oldest first: newest on top again
    detail::remote_item* next = others->next;
    post_remote(*others);
    others = next;
  }
  while (mine != nullptr) {
    detail::remote_item* next = mine->next;
    mine->run(*mine, *this);
    mine = next;
  }
}

void io_context::run() {
  current_scope cs(this);
  loop([this] { return stop_requested_.load(std::memory_order_acquire); }, true);
  stop_requested_.store(false);
}

void io_context::run_until_idle() {
  current_scope cs(this);
  loop([this] { return stop_requested_.load(std::memory_order_acquire) || idle(); }, true);
  stop_requested_.store(false);
}

void io_context::run_until(bool (*done)(void*), void* arg) {
  current_scope cs(this);
  loop([&] { return done(arg); }, false);
}

// Cancels everything in flight and runs until every completion has arrived, so no
// operation's memory is released while the kernel may still write to it.
bool io_context::shutting_down() const noexcept { return state_->shutting_down; }

void io_context::shutdown() noexcept {
  if (owner_ != std::thread::id{} && owner_ != std::this_thread::get_id()) {
    // Only the loop's thread may drive its ring, so what is still pending could never
    // complete: a task would never resume, a sender's receiver never hear back (a
    // sync_wait elsewhere would wait forever). Refuse loudly rather than hang them.
    if (!idle()) {
      log(log_level::error,
          "io_context destroyed on a thread other than the one that ran it, with "
          "%zu operation(s) in flight or work queued that could never complete; "
          "terminating (destroy it on the thread that ran it)",
          backend_->in_flight());
      std::terminate();
    }
    return;
  }
  current_scope cs(this);
  state_->shutting_down = true;
  backend_->cancel_all();
  while (events_ != nullptr) cancel(*events_);
  for (detail::op_base* op = offloaded_; op != nullptr;) {  // the running ones are awaited
    detail::op_base* next = op->next;
    cancel(*op);
    op = next;
  }
  // Children on other loops: stop them; their completion comes back through the inbox.
  for (detail::foreign_wait* w = foreign_; w != nullptr; w = w->next) w->child_stop->request_stop();
  // Tasks that keep yielding without any I/O would keep the loop busy forever: after
  // this many such rounds they are abandoned.
  constexpr int max_idle_io_rounds = 100000;
  int rounds = 0;
  try {
    loop(
        [&] {
          return idle() || (backend_->in_flight() == 0 && offloaded_waiting_ == 0 && foreign_ == nullptr &&
                            ++rounds > max_idle_io_rounds);
        },
        false);
  } catch (...) {
    log(log_level::error, "exception while shutting down an io_context");
    std::terminate();
  }
  if (!idle()) log(log_level::error, "io_context shut down with tasks that never stopped yielding; abandoned");
}

}  // namespace ringio
