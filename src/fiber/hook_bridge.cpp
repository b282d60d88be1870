// SPDX-License-Identifier: Apache-2.0
// ringio's side of the system-call hooks: readiness waits and sleeps for the running
// fiber, and the wake-up of waits whose descriptor is being closed.
#include "hook_bridge.hpp"

#include <dlfcn.h>
#include <liburing.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <new>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "ringio/any_opcode.hpp"
#include "ringio/blocking/spawn_blocking.hpp"
#include "ringio/error.hpp"
#include "ringio/fiber/this_fiber.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/wait_ready.hpp"
#include "ringio/time/timeout.hpp"

namespace ringio::detail {
namespace {

// One wait of a fiber of this thread; lives on the fiber's stack for the wait, linked
// with the other waits of this thread on the same descriptor.
struct hook_wait {
  int fd;
  bool closed = false;
  std::stop_source source;
  hook_wait* prev = nullptr;
  hook_wait* next = nullptr;
};

// The waits of this thread's fibers by descriptor number: closing(fd) finds its waits at
// once however many fibers wait on other descriptors. Grows to the largest number waited
// on (an allocation only when it grows).
thread_local std::vector<hook_wait*> waits_by_fd;
// Stop sources not yet stopped, kept for reuse: a wait allocates nothing in steady state.
thread_local std::vector<std::stop_source> spare_sources;

void* const* running_slot() { return reinterpret_cast<void* const*>(&running_fiber); }

// A call that would wait fails at once with ECANCELED when the fiber was stopped, or
// when its loop is being destroyed (the wait interrupted by either got EINTR): a C
// library that retries after EINTR then gives up instead of spinning.
bool stopped(const fiber_core* f) noexcept {
  const std::stop_token* t = f->stop_token();
  if (t != nullptr && t->stop_requested()) return true;
  io_context* ctx = io_context::current();
  return ctx != nullptr && ctx->shutting_down();
}

int error_to_errno(const std::error_code& ec, const hook_wait& w) {
  if (w.closed) return -EBADF;
  if (ec == std::errc::operation_canceled) return -EINTR;
  if (ec == std::errc::timed_out) return -ETIMEDOUT;
  if (ec == std::errc::bad_file_descriptor) return -EBADF;
  if ((ec.category() == std::system_category() || ec.category() == std::generic_category()) && ec.value() > 0)
    return -ec.value();
  return -EIO;
}

// The registration of one wait for the length of a scope: close(fd) on this thread
// stops it (closing()).
class registered_wait {
 public:
  explicit registered_wait(int fd) : w_{fd} {
    if (!spare_sources.empty()) {
      w_.source = std::move(spare_sources.back());
      spare_sources.pop_back();
    }
    const auto i = static_cast<std::size_t>(fd);
    if (i >= waits_by_fd.size()) waits_by_fd.resize(std::max<std::size_t>(i + 1, 2 * waits_by_fd.size()), nullptr);
    w_.next = waits_by_fd[i];
    if (w_.next != nullptr) w_.next->prev = &w_;
    waits_by_fd[i] = &w_;
  }
  ~registered_wait() {
    if (w_.prev != nullptr) w_.prev->next = w_.next;
    else waits_by_fd[static_cast<std::size_t>(w_.fd)] = w_.next;
    if (w_.next != nullptr) w_.next->prev = w_.prev;
    if (!w_.source.stop_requested()) spare_sources.push_back(std::move(w_.source));
  }
  registered_wait(const registered_wait&) = delete;
  registered_wait& operator=(const registered_wait&) = delete;

  [[nodiscard]] std::stop_token token() const noexcept { return w_.source.get_token(); }
  [[nodiscard]] const hook_wait& wait() const noexcept { return w_; }

 private:
  hook_wait w_;
};

// Awaits `op` for the running fiber under the wait's stop and `timeout_ns` (negative:
// none). The operation's value (>= 0) or -errno as wait() reports them.
template <class Op>
long await_registered(Op& op, int fd, long long timeout_ns) {
  registered_wait reg(fd);
  try {
    if (timeout_ns >= 0) op.set_deadline(deadline_after(std::chrono::nanoseconds(timeout_ns)));
    op.set_stop_token(reg.token());
    auto r = this_fiber::await(op);
    if (!r) return error_to_errno(r.error(), reg.wait());
    if constexpr (std::is_void_v<typename decltype(r)::value_type>) {
      return reg.wait().closed ? -EBADF : 0;
    } else {
      return static_cast<long>(*r);  // what the kernel transferred, even if closed meanwhile
    }
  } catch (...) {  // the fiber is being unwound: the C code above cannot unwind
    return -ECANCELED;
  }
}

int wait_fd(int fd, int events, long long timeout_ns) {
  fiber_core* f = running_fiber;
  if (f == nullptr) return -EAGAIN;
  if (fd < 0) return -EBADF;
  if (stopped(f)) return -ECANCELED;
  fd_wait_op op = (events & 2) != 0 ? wait_writable(fd) : wait_readable(fd);
  return static_cast<int>(await_registered(op, fd, timeout_ns));
}

// Whether one io_uring request can stand for the call: the running fiber's loop is
// io_uring's completion backend. Otherwise the hooks wait for readiness.
bool ring_available() noexcept {
  const io_context* ctx = io_context::current();
  return ctx != nullptr && ctx->backend() == backend_kind::uring;
}

long ring_recv(int fd, void* buf, unsigned long n, int flags, long long timeout_ns) {
  fiber_core* f = running_fiber;
  if (f == nullptr || fd < 0 || !ring_available()) return RINGIO_HOOK_NO_RING;
  if (stopped(f)) return -ECANCELED;
  // The request's length is 32 bits; the kernel's recv takes at most INT_MAX anyway.
  const auto len = static_cast<std::size_t>(std::min<unsigned long>(n, INT_MAX));
  auto op = any_opcode([&](io_uring_sqe* sqe) { io_uring_prep_recv(sqe, fd, buf, len, flags); });
  return await_registered(op, fd, timeout_ns);
}

int ring_accept(int fd, void* addr, void* addrlen, int flags, long long timeout_ns) {
  fiber_core* f = running_fiber;
  if (f == nullptr || fd < 0 || !ring_available()) return RINGIO_HOOK_NO_RING;
  if (stopped(f)) return -ECANCELED;
  auto op = any_opcode([&](io_uring_sqe* sqe) {
    io_uring_prep_accept(sqe, fd, static_cast<sockaddr*>(addr), static_cast<socklen_t*>(addrlen), flags);
  });
  return static_cast<int>(await_registered(op, fd, timeout_ns));
}

int sleep_ns(long long ns, long long* remaining_ns) {
  fiber_core* f = running_fiber;
  if (remaining_ns != nullptr) *remaining_ns = 0;
  if (f == nullptr) return -EAGAIN;
  if (stopped(f)) {
    if (remaining_ns != nullptr) *remaining_ns = ns;
    return -ECANCELED;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  try {
    auto r = this_fiber::sleep_until(until);
    if (r) return 0;
  } catch (...) {
  }
  if (remaining_ns != nullptr) {
    const auto left = until - std::chrono::steady_clock::now();
    *remaining_ns = left.count() > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(left).count() : 0;
  }
  return -EINTR;
}

void closing(int fd) {
  const auto i = static_cast<std::size_t>(fd);
  if (fd >= 0 && i < waits_by_fd.size()) {
    for (hook_wait* w = waits_by_fd[i]; w != nullptr; w = w->next) {
      if (w->closed) continue;
      w->closed = true;
      w->source.request_stop();
    }
  }
  forget_descriptor(fd);
}

// The argument of a run_blocking() call: handed to `discard` unless released.
class owned_arg {
 public:
  owned_arg(void* arg, void (*discard)(void*)) noexcept : arg_(arg), discard_(discard) {}
  owned_arg(owned_arg&& o) noexcept : arg_(std::exchange(o.arg_, nullptr)), discard_(o.discard_) {}
  owned_arg(const owned_arg&) = delete;
  owned_arg& operator=(const owned_arg&) = delete;
  owned_arg& operator=(owned_arg&&) = delete;
  ~owned_arg() {
    if (arg_ != nullptr) discard_(arg_);
  }
  void* get() const noexcept { return arg_; }
  void release() noexcept { arg_ = nullptr; }

 private:
  void* arg_;
  void (*discard_)(void*);
};

int run_blocking(void (*fn)(void*), void (*discard)(void*), void* arg) {
  owned_arg owned(arg, discard);
  fiber_core* f = running_fiber;
  if (f == nullptr) return -EAGAIN;
  if (stopped(f)) return -ECANCELED;
  try {
    // Whatever happens to the await, the job owns `arg` until it is handed back: a
    // stopped await leaves the job's value (the argument) to be destroyed unread.
    auto op = spawn_blocking([fn, a = std::move(owned)]() mutable {
      fn(a.get());
      return std::move(a);
    });
    auto r = this_fiber::await(std::move(op));
    if (r) {
      r->release();
      return 0;
    }
    if (r.error() == errc::queue_full) return -EAGAIN;
    return -EINTR;
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  } catch (...) {  // the fiber is being unwound
    return -ECANCELED;
  }
}

constexpr ringio_fiber_hook_bridge the_bridge{sizeof(ringio_fiber_hook_bridge),
                                              &running_slot,
                                              &wait_fd,
                                              &sleep_ns,
                                              &closing,
                                              &run_blocking,
                                              &ring_recv,
                                              &ring_accept};

}  // namespace

void attach_fiber_hooks() noexcept {
  // A hooks library loaded into the process (LD_PRELOAD, or linked as a shared library)
  // exports this; one linked statically into the program attaches itself.
  using attach_fn = void (*)(const ringio_fiber_hook_bridge*) noexcept;
  if (void* sym = ::dlsym(RTLD_DEFAULT, "ringio_fiber_hooks_attach")) reinterpret_cast<attach_fn>(sym)(&the_bridge);
}

}  // namespace ringio::detail

const ringio_fiber_hook_bridge* ringio_fiber_hook_bridge_get() noexcept { return &ringio::detail::the_bridge; }
