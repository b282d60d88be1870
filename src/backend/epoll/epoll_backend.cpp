// SPDX-License-Identifier: Apache-2.0
#include "backend/epoll/epoll_backend.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "core/backend_factory.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/detail/fd_generation.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {
namespace {

constexpr std::uint64_t wake_token = ~std::uint64_t{0};
constexpr int max_events = 256;

}  // namespace

std::unique_ptr<backend> make_epoll_backend(io_context& ctx, loop_state& st, const io_context_options&) {
  return std::make_unique<epoll_backend>(ctx, st);
}

epoll_backend::epoll_backend(io_context& ctx, loop_state& st) : ctx_(ctx), st_(st) {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) throw std::system_error(errno, std::system_category(), "epoll_create1");
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    int err = errno;
    ::close(epfd_);
    throw std::system_error(err, std::system_category(), "eventfd");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;  // level triggered: drained on every wake-up
  ev.data.u64 = wake_token;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev) < 0) {
    int err = errno;
    ::close(wake_fd_);
    ::close(epfd_);
    throw std::system_error(err, std::system_category(), "epoll_ctl(eventfd)");
  }
}

epoll_backend::~epoll_backend() {
  ::close(wake_fd_);
  ::close(epfd_);
}

std::string epoll_backend::describe() const {
  std::string s = "epoll (edge triggered, epoll_pwait2 timeouts, direct descriptors off: readiness backend";
  if (perturb_.on()) s += ", perturbed (RINGIO_PERTURB=" + std::to_string(perturb_.seed()) + ")";
  return s + ")";
}

epoll_backend::wait_list& epoll_backend::list_of(op_base& op) noexcept {
  fd_state& s = fds_[static_cast<std::size_t>(op.fd)];
  return op.want == interest::writable ? s.writers : s.readers;
}

// A result is known at start: finish synchronously while the loop's budget lasts,
// otherwise through the ready queue so other tasks get a turn.
bool epoll_backend::complete_now(op_base& op, int res) noexcept {
  op.res = res;
  if (st_.sync_budget > 0) {
    --st_.sync_budget;
    op.state = op_state::done;
    return true;
  }
  ctx_.schedule_completion(op);
  return false;
}

bool epoll_backend::start(op_base& op) {
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
    case op_kind::event:  // handled by io_context, never reaches a backend
      break;
  }
  // Skip the syscall when this direction is known not to be ready (edge triggered:
  // an edge since the last EAGAIN would have set the flag again).
  fd_state* s = op.want == interest::none ? nullptr : known(op.fd);  // (shutdown, close: no wait)
  bool* ready = s == nullptr ? nullptr : (op.want == interest::writable ? &s->writable : &s->readable);
  if (ready == nullptr || *ready) {
    op.drained = false;
    int r = op.vt->attempt(op);
    // A short read of a stream leaves it empty: the next read can wait for an edge
    // instead of asking the kernel and hearing EAGAIN (any later data brings an edge).
    if (op.drained && ready != nullptr && !s->read_closed) *ready = false;
    if (r != -EAGAIN) return complete_now(op, r);
  }
  if (op.deadline_ns != 0 && op.deadline_ns <= monotonic_ns()) {
    op.timed_out = true;
    return complete_now(op, -ECANCELED);
  }
  if (!watch(op)) return complete_now(op, -errno);
  fd_state& st = fds_[static_cast<std::size_t>(op.fd)];
  if (op.want == interest::writable ? !st.write_closed : !st.read_closed)
    (op.want == interest::writable ? st.writable : st.readable) = false;
  op.state = op_state::in_flight;
  ++in_flight_;
  list_of(op).push(op);
  if (op.deadline_ns != 0) timers_.push(op);
  return false;
}

// The fd's state if it is registered for the file it names now, else null.
epoll_backend::fd_state* epoll_backend::known(int fd) noexcept {
  auto idx = static_cast<std::size_t>(fd);
  if (idx >= fds_.size()) return nullptr;
  fd_state& s = fds_[idx];
  return s.registered && s.generation == fd_generation(fd) ? &s : nullptr;
}

// Registers the fd with epoll once (edge triggered, both directions).
bool epoll_backend::watch(op_base& op) noexcept {
  if (op.fd < 0) {  // no descriptor (a closed handle, a foreign -1): nothing to watch
    errno = EBADF;
    return false;
  }
  auto idx = static_cast<std::size_t>(op.fd);
  if (idx >= fds_.size()) fds_.resize(idx + 1 > fds_.size() * 2 ? idx + 1 : fds_.size() * 2);
  fd_state& s = fds_[idx];
  std::uint32_t gen = fd_generation(op.fd);
  if (s.registered && s.generation == gen) return true;
  // The number names another file now: whoever waited on the old one must not touch it.
  fail_waiters(s, -EBADF);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = idx;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, op.fd, &ev) < 0) {
    // EEXIST: registered before under an older generation of the same file.
    if (errno != EEXIST || ::epoll_ctl(epfd_, EPOLL_CTL_MOD, op.fd, &ev) < 0) return false;
  }
  s.registered = true;
  s.generation = gen;
  s.readable = s.writable = true;  // unknown until EAGAIN says otherwise
  s.read_closed = s.write_closed = false;
  return true;
}

void epoll_backend::cancel(op_base& op) noexcept { fail(op, -ECANCELED); }

// Takes a waiting operation out of its wait list and timer and completes it with `res`
// later, from the ready queue.
void epoll_backend::fail(op_base& op, int res) noexcept {
  if (op.state != op_state::in_flight) return;
  if (op.kind == op_kind::io) list_of(op).unlink(op);
  timers_.remove(op);
  --in_flight_;
  op.res = res;
  ctx_.schedule_completion(op);
}

void epoll_backend::cancel_all() noexcept {
  for (fd_state& s : fds_) {
    while (s.readers.head != nullptr) cancel(*s.readers.head);
    while (s.writers.head != nullptr) cancel(*s.writers.head);
  }
  while (!timers_.empty()) cancel(*timers_.top());
}

// Fails every operation waiting in `s` with `res`.
void epoll_backend::fail_waiters(fd_state& s, int res) noexcept {
  for (wait_list* l : {&s.readers, &s.writers})
    while (op_base* op = l->head) fail(*op, res);
}

// The waiters of a slot whose fd was closed by ringio (its generation moved on) waited
// on a file that is gone from this number. Returns true if the slot was stale.
bool epoll_backend::drop_stale(std::size_t idx) noexcept {
  fd_state& s = fds_[idx];
  if (!s.registered || s.generation == fd_generation(static_cast<int>(idx))) return false;
  fail_waiters(s, -EBADF);
  return true;
}

void epoll_backend::cancel_fd(int fd, bool direct) noexcept {
  auto idx = static_cast<std::size_t>(fd);
  if (direct || fd < 0 || idx >= fds_.size()) return;  // no direct descriptors here
  fail_waiters(fds_[idx], -ECANCELED);
}

void epoll_backend::finish(op_base& op) noexcept {
  --in_flight_;
  finish_operation(op);
}

// Tries the operations that waited when the event arrived, in order, until one would
// still block. Operations queued by the resumed coroutines wait for the next edge.
// (fds_ may grow while a resumed coroutine runs: look the list up every time.)
void epoll_backend::run_waiters(std::size_t idx, bool writers) noexcept {
  auto list = [&]() -> wait_list& { return writers ? fds_[idx].writers : fds_[idx].readers; };
  op_base* last = list().tail;
  while (op_base* op = list().head) {
    op->drained = false;
    int r = op->vt->attempt(*op);
    fd_state& s = fds_[idx];
    bool closed = writers ? s.write_closed : s.read_closed;
    if ((op->drained || r == -EAGAIN) && !closed) (writers ? s.writable : s.readable) = false;
    if (r == -EAGAIN) return;
    list().unlink(*op);
    timers_.remove(*op);
    op->res = r;
    bool was_last = op == last;
    finish(*op);
    if (was_last) return;
  }
}

std::int64_t epoll_backend::wait_timeout_ns(std::int64_t wake_at_ns) const noexcept {
  std::int64_t until = timers_.empty() ? wake_at_ns : timers_.top()->deadline_ns;
  if (wake_at_ns != 0 && wake_at_ns < until) until = wake_at_ns;
  if (until == 0) return -1;
  std::int64_t d = until - monotonic_ns();
  return d < 0 ? 0 : d;
}

void epoll_backend::poll(bool block, std::int64_t wake_at_ns) {
  epoll_event events[max_events];
  std::int64_t timeout = block ? wait_timeout_ns(wake_at_ns) : 0;
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout >= 0) {
    ts.tv_sec = timeout / 1'000'000'000;
    ts.tv_nsec = timeout % 1'000'000'000;
    tsp = &ts;
  }
  int n = ::epoll_pwait2(epfd_, events, max_events, tsp, nullptr);
  if (st_.timing) st_.kernel_return_ns = monotonic_ns();  // the waiters run below are run time
  ++st_.stats.kernel_waits;
  ++st_.counters.kernel_waits;
  if (n < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::system_category(), "epoll_pwait2");
    n = 0;
  }
  if (perturb_.on() && n > 0) {
    // Perturbation: the events in another order, and one of them repeated (readiness
    // that turns out spurious: the attempt meets EAGAIN and waits again).
    if (perturb_.reorders())
      for (int i = n - 1; i > 0; --i) std::swap(events[i], events[perturb_.below(static_cast<std::uint64_t>(i) + 1)]);
    if (n < max_events && perturb_.defers() && perturb_.one_in(4)) {
      events[n] = events[perturb_.below(static_cast<std::uint64_t>(n))];
      ++n;
    }
  }
  for (int i = 0; i < n; ++i) {
    const epoll_event& ev = events[i];
    ++st_.stats.completions;
    if (ev.data.u64 == wake_token) {
      ++st_.stats.eventfd_wakes;
      ++st_.counters.wakeups;
      std::uint64_t v;
      [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof v);
      continue;
    }
    auto idx = static_cast<std::size_t>(ev.data.u64);
    // An event of a file that ringio closed under this number (a duplicate kept it
    // open): its waiters are stale, and the number's new file (if any) saw no event.
    if (drop_stale(idx)) continue;
    fd_state& s = fds_[idx];
    if (ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) s.readable = true;
    if (ev.events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) s.writable = true;
    if (ev.events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) s.read_closed = true;
    if (ev.events & (EPOLLHUP | EPOLLERR)) s.write_closed = true;
    if (ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) run_waiters(idx, false);
    if (ev.events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) run_waiters(idx, true);
  }
  expire_timers();
}

void epoll_backend::expire_timers() noexcept {
  if (timers_.empty()) return;
  std::int64_t now = monotonic_ns();
  while (!timers_.empty() && timers_.top()->deadline_ns <= now) {
    op_base& op = *timers_.top();
    timers_.remove(op);
    if (op.kind == op_kind::timer) {
      op.res = 0;
    } else {
      // with_timeout: the deadline won the race against readiness.
      list_of(op).unlink(op);
      op.timed_out = true;
      op.res = -ECANCELED;
    }
    finish(op);
  }
}

void epoll_backend::wake() noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

}  // namespace ringio::detail
