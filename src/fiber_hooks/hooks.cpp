// SPDX-License-Identifier: Apache-2.0
// System-call hooks for ringio fibers: the blocking calls a C library makes (read,
// recv, connect, poll, sleep, ...) become waits through the loop when they are made
// inside a fiber, and are libc's own calls everywhere else (docs/fibers.md, "Hooks").
//
// Shape of every hooked call inside a fiber: try without blocking (MSG_DONTWAIT, or
// O_NONBLOCK set for the duration of the call), and on EAGAIN wait for readiness
// through the loop (the fiber suspends), then try again. A descriptor the program made
// O_NONBLOCK itself gets libc's answer, EAGAIN included (its flag is read from the open
// file when a call would block, never cached: dup, fork and FIONBIO share and set it).
// The multiplexers (poll, ppoll, select, pselect, epoll_wait and variants) try with a
// zero timeout, then wait through the loop; getaddrinfo of a name runs on the loop's
// blocking pool.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "../fiber/hook_bridge.hpp"

namespace {

std::atomic<const ringio_fiber_hook_bridge*> bridge{nullptr};

// The program's "fiber running now" slot for this thread, found once per thread.
__attribute__((tls_model("initial-exec"))) thread_local void* const* fiber_slot = nullptr;

// Whether the calling code runs in a ringio fiber: one thread-local load (and, once a
// bridge is attached, the slot it points to).
inline bool in_fiber() noexcept {
  void* const* s = fiber_slot;
  if (s == nullptr) [[unlikely]] {
    const ringio_fiber_hook_bridge* b = bridge.load(std::memory_order_acquire);
    if (b == nullptr) return false;
    s = fiber_slot = b->running_fiber_slot();
  }
  return *s != nullptr;
}

const ringio_fiber_hook_bridge& the_bridge() noexcept { return *bridge.load(std::memory_order_relaxed); }

// libc's definitions (the next definition after this library's), found on first use.
// A constant-initialised atomic per name rather than a function-local static: no
// initialisation guard, and threads racing to the first use all store the same pointer.
class next_definition {
 public:
  explicit constexpr next_definition(const char* name) noexcept : name_(name) {}
  void* get() noexcept {
    void* f = fn_.load(std::memory_order_relaxed);
    if (f == nullptr) [[unlikely]] {
      f = ::dlsym(RTLD_NEXT, name_);
      fn_.store(f, std::memory_order_relaxed);
    }
    return f;
  }

 private:
  const char* name_;
  std::atomic<void*> fn_{nullptr};
};
#define RINGIO_REAL(name)                                                          \
  static constinit next_definition real_definition(#name);                         \
  const auto real_fn = reinterpret_cast<decltype(&::name)>(real_definition.get()); \
  if (real_fn == nullptr) [[unlikely]] {                                           \
    errno = ENOSYS;                                                                \
    return -1;                                                                     \
  }

ssize_t libc_read(int fd, void* buf, size_t n) {
  RINGIO_REAL(read);
  return real_fn(fd, buf, n);
}
ssize_t libc_write(int fd, const void* buf, size_t n) {
  RINGIO_REAL(write);
  return real_fn(fd, buf, n);
}
ssize_t libc_readv(int fd, const iovec* iov, int n) {
  RINGIO_REAL(readv);
  return real_fn(fd, iov, n);
}
ssize_t libc_writev(int fd, const iovec* iov, int n) {
  RINGIO_REAL(writev);
  return real_fn(fd, iov, n);
}
ssize_t libc_recv(int fd, void* buf, size_t n, int flags) {
  RINGIO_REAL(recv);
  return real_fn(fd, buf, n, flags);
}
ssize_t libc_send(int fd, const void* buf, size_t n, int flags) {
  RINGIO_REAL(send);
  return real_fn(fd, buf, n, flags);
}
ssize_t libc_recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* from, socklen_t* len) {
  RINGIO_REAL(recvfrom);
  return real_fn(fd, buf, n, flags, from, len);
}
ssize_t libc_sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* to, socklen_t len) {
  RINGIO_REAL(sendto);
  return real_fn(fd, buf, n, flags, to, len);
}
ssize_t libc_recvmsg(int fd, msghdr* m, int flags) {
  RINGIO_REAL(recvmsg);
  return real_fn(fd, m, flags);
}
ssize_t libc_sendmsg(int fd, const msghdr* m, int flags) {
  RINGIO_REAL(sendmsg);
  return real_fn(fd, m, flags);
}
int libc_connect(int fd, const sockaddr* a, socklen_t len) {
  RINGIO_REAL(connect);
  return real_fn(fd, a, len);
}
int libc_accept(int fd, sockaddr* a, socklen_t* len) {
  RINGIO_REAL(accept);
  return real_fn(fd, a, len);
}
int libc_accept4(int fd, sockaddr* a, socklen_t* len, int flags) {
  RINGIO_REAL(accept4);
  return real_fn(fd, a, len, flags);
}
int libc_poll(pollfd* fds, nfds_t n, int timeout) {
  RINGIO_REAL(poll);
  return real_fn(fds, n, timeout);
}
int libc_close(int fd) {
  RINGIO_REAL(close);
  return real_fn(fd);
}
int libc_nanosleep(const timespec* req, timespec* rem) {
  RINGIO_REAL(nanosleep);
  return real_fn(req, rem);
}
int libc_usleep(useconds_t us) {
  RINGIO_REAL(usleep);
  return real_fn(us);
}
unsigned libc_sleep(unsigned s) {
  static constinit next_definition real_definition("sleep");
  const auto real_fn = reinterpret_cast<decltype(&::sleep)>(real_definition.get());
  return real_fn != nullptr ? real_fn(s) : s;
}

constexpr int want_read = 1;
constexpr int want_write = 2;

long long now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Whether the program made `fd` non-blocking itself (then it gets libc's answers).
bool user_nonblocking(int fd) noexcept {
  const int saved = errno;
  const int fl = ::fcntl(fd, F_GETFL);
  errno = saved;
  return fl >= 0 && (fl & O_NONBLOCK) != 0;
}

// The deadline of one call: SO_RCVTIMEO or SO_SNDTIMEO of a socket, taken at the
// call's first wait and kept across its waits, as the kernel counts it.
class call_deadline {
 public:
  call_deadline(int fd, int option) noexcept : fd_(fd), option_(option) {}
  /// Nanoseconds left (negative: no deadline), 0 when it passed.
  long long left() noexcept {
    if (!known_) {
      known_ = true;
      timeval tv{};
      socklen_t len = sizeof tv;
      const int saved = errno;
      if (option_ != 0 && ::getsockopt(fd_, SOL_SOCKET, option_, &tv, &len) == 0 && (tv.tv_sec != 0 || tv.tv_usec != 0))
        at_ = now_ns() + static_cast<long long>(tv.tv_sec) * 1000000000LL + static_cast<long long>(tv.tv_usec) * 1000;
      errno = saved;
    }
    if (at_ < 0) return -1;
    const long long d = at_ - now_ns();
    return d > 0 ? d : 0;
  }
  void set_timeout_ms(int ms) noexcept { set_timeout_ns(ms < 0 ? -1 : static_cast<long long>(ms) * 1000000LL); }
  /// A wait's result as the call reports it. A stop is EINTR when it came while the call
  /// was under way: also when a later wait of the call finds it (it came between two
  /// waits, or together with the completion that ended the previous one); ECANCELED only
  /// at the call's first wait (the fiber was stopped before the call).
  template <class R>
  R after_wait(R rc) noexcept {
    if (rc == -ECANCELED && waited_) rc = -EINTR;
    waited_ = true;
    return rc;
  }
  /// `ns` from now; negative: none.
  void set_timeout_ns(long long ns) noexcept {
    known_ = true;
    at_ = ns < 0 ? -1 : now_ns() + ns;
  }

 private:
  int fd_;
  int option_;
  bool known_ = false;
  bool waited_ = false;
  long long at_ = -1;
};

// After EAGAIN from a non-blocking try: whether the call may wait, with the time it
// has (negative: no deadline). A descriptor the program made non-blocking, or a passed
// SO_*TIMEO deadline, may not: errno is EAGAIN.
bool may_wait(int fd, call_deadline& deadline, long long& left) noexcept {
  if (user_nonblocking(fd)) {
    errno = EAGAIN;
    return false;
  }
  left = deadline.left();
  if (left == 0) {
    errno = EAGAIN;
    return false;
  }
  return true;
}

// Waits `left` for `fd` through the loop. true: try again; false: give up with errno
// set (EAGAIN after the deadline; EINTR, ECANCELED, EBADF from the wait).
bool wait_ready(int fd, int events, call_deadline& deadline, long long left) noexcept {
  const int rc = deadline.after_wait(the_bridge().wait(fd, events, left));
  if (rc == 0) return true;
  errno = rc == -ETIMEDOUT ? EAGAIN : -rc;
  return false;
}

// After EAGAIN from a non-blocking try: waits for `fd` through the loop, if the call
// may wait. true: try again; false: give up with errno set.
bool wait_again(int fd, int events, call_deadline& deadline) noexcept {
  long long left = 0;
  return may_wait(fd, deadline, left) && wait_ready(fd, events, deadline, left);
}

// A socket call retried with MSG_DONTWAIT until it does not need to block. Returns
// -2 with errno ENOTSOCK untouched when `fd` is not a socket (the caller falls back).
template <class Try>
ssize_t socket_call(int fd, int events, call_deadline& deadline, Try attempt) {
  for (;;) {
    const ssize_t r = attempt();
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return r;
    if (!wait_again(fd, events, deadline)) return -1;
  }
}

// Whether the program's ringio offers `member` of the bridge (a hooks library newer
// than the program's ringio finds the older, shorter bridge).
#define RINGIO_BRIDGE_HAS(member) \
  (the_bridge().size >= offsetof(ringio_fiber_hook_bridge, member) + sizeof(the_bridge().member))

// The answer of a ring request (ring_recv, ring_accept) as a libc call's: the value, or
// -1 with errno (a passed SO_*TIMEO deadline is EAGAIN, as the kernel reports it).
long from_ring(long r) noexcept {
  if (r >= 0) return r;
  errno = r == -ETIMEDOUT ? EAGAIN : static_cast<int>(-r);
  return -1;
}

// A receive on a blocking socket: a try with MSG_DONTWAIT, and when nothing is there,
// the receive itself as one io_uring request where the loop has io_uring (the kernel
// waits and copies: no readiness round trip, no second try); readiness and another try
// elsewhere. `flags` without MSG_DONTWAIT and MSG_WAITALL.
ssize_t receive(int fd, void* buf, size_t n, int flags, sockaddr* from, socklen_t* len, call_deadline& deadline) {
  const bool ring = from == nullptr && RINGIO_BRIDGE_HAS(ring_recv);
  for (;;) {
    const ssize_t r = libc_recvfrom(fd, buf, n, flags | MSG_DONTWAIT, from, len);
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return r;
    long long left = 0;
    if (!may_wait(fd, deadline, left)) return -1;
    if (ring) {
      const long rr = the_bridge().ring_recv(fd, buf, n, flags, left);
      if (rr != RINGIO_HOOK_NO_RING) return from_ring(deadline.after_wait(rr));  // else nothing was done
    }
    if (!wait_ready(fd, want_read, deadline, left)) return -1;
  }
}

// Any descriptor: the call made with O_NONBLOCK set on it for its duration, retried
// after readiness. Regular files are always ready: they are read as libc reads them.
template <class Try>
ssize_t nonblocking_call(int fd, int events, call_deadline& deadline, Try attempt) {
  for (;;) {
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK) != 0) return attempt();
    ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    const ssize_t r = attempt();
    const int err = errno;
    ::fcntl(fd, F_SETFL, fl);
    errno = err;
    if (r >= 0 || (err != EAGAIN && err != EWOULDBLOCK)) return r;
    const long long left = deadline.left();
    if (left == 0) {
      errno = EAGAIN;
      return -1;
    }
    const int rc = deadline.after_wait(the_bridge().wait(fd, events, left));
    if (rc != 0) {
      errno = rc == -ETIMEDOUT ? EAGAIN : -rc;
      return -1;
    }
  }
}

// Sends on a blocking stream socket complete unless an error, timeout or stop comes
// first (then the bytes sent so far are the result, as the kernel reports them).
template <class Once>
ssize_t send_fully(std::size_t total, Once once) {
  std::size_t done = 0;
  for (;;) {
    const ssize_t r = once(done);
    if (r < 0) return done > 0 ? static_cast<ssize_t>(done) : -1;
    done += static_cast<std::size_t>(r);
    if (done >= total || r == 0) return static_cast<ssize_t>(done);
  }
}

std::size_t iov_total(const iovec* iov, std::size_t n) {
  std::size_t t = 0;
  for (std::size_t i = 0; i < n; ++i) t += iov[i].iov_len;
  return t;
}

// Progress through an iovec array without copying it: the next transfer is the rest of
// the array, or, when its head entry went out in part, the rest of that entry alone.
class iov_cursor {
 public:
  iov_cursor(const iovec* iov, std::size_t n) noexcept : iov_(iov), n_(n) {}
  /// The next piece: `n` entries from the returned pointer.
  const iovec* next(std::size_t& n) noexcept {
    if (skip_ == 0) {
      n = std::min<std::size_t>(n_, IOV_MAX);
      return iov_;
    }
    one_ = iovec{static_cast<char*>(iov_[0].iov_base) + skip_, iov_[0].iov_len - skip_};
    n = 1;
    return &one_;
  }
  void advance(std::size_t bytes) noexcept {
    bytes += skip_;
    skip_ = 0;
    while (n_ > 0 && bytes >= iov_[0].iov_len) {
      bytes -= iov_[0].iov_len;
      ++iov_;
      --n_;
    }
    skip_ = n_ > 0 ? bytes : 0;
  }

 private:
  const iovec* iov_;
  std::size_t n_;
  std::size_t skip_ = 0;
  iovec one_{};
};

// A hooked call that succeeded leaves errno as it found it, as libc's do.
template <class R>
R keep_errno(int saved, R r) noexcept {
  if (r >= 0) errno = saved;
  return r;
}

bool stream_socket(int fd) noexcept {
  const int saved = errno;
  int type = 0;
  socklen_t len = sizeof type;
  const bool stream = ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
  errno = saved;
  return stream;
}

// Whether the peer of a stream socket has closed its side (nothing more will come).
bool peer_done(int fd) noexcept {
  pollfd p{fd, POLLRDHUP, 0};
  return libc_poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// For waits that have no readiness to wait on: sleeps a millisecond, or what is left of
// `left_ns` when less (negative: no deadline). 0, or -EINTR / -ECANCELED on a stop.
int sleep_a_moment(long long left_ns) noexcept {
  constexpr long long moment = 1000000;
  long long rem = 0;
  return the_bridge().sleep(left_ns < 0 ? moment : std::min(left_ns, moment), &rem);
}

// A zero-byte receive on a stream: libc answers 0 at once, whatever is queued; `attempt`
// is the receive with MSG_DONTWAIT.
template <class Try>
ssize_t receive_nothing(Try attempt) {
  const int saved = errno;
  const ssize_t r = attempt();
  if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return r;
  errno = saved;
  return 0;
}

// recv(MSG_WAITALL | MSG_PEEK) of a stream: the bytes stay queued, so the socket stays
// readable while fewer than `n` are there; look again every millisecond until `n` are
// there, the peer is done, the deadline passes or a stop comes (then what is there).
ssize_t peek_all(int fd, void* buf, size_t n, int flags, sockaddr* from, socklen_t* len, call_deadline& deadline) {
  const int try_flags = (flags & ~MSG_WAITALL) | MSG_DONTWAIT;
  for (;;) {
    const ssize_t r =
        socket_call(fd, want_read, deadline, [&] { return libc_recvfrom(fd, buf, n, try_flags, from, len); });
    if (r <= 0 || static_cast<size_t>(r) >= n || peer_done(fd)) return r;
    const long long left = deadline.left();
    if (left == 0) return r;
    if (deadline.after_wait(sleep_a_moment(left)) != 0) return r;
  }
}

ssize_t hooked_recv(int fd, void* buf, size_t n, int flags, sockaddr* from, socklen_t* len) {
  // Zero bytes from a stream: libc answers at once, whatever is queued.
  if (n == 0 && stream_socket(fd))
    return receive_nothing([&] { return libc_recvfrom(fd, buf, 0, (flags & ~MSG_WAITALL) | MSG_DONTWAIT, from, len); });
  call_deadline deadline(fd, SO_RCVTIMEO);
  // MSG_WAITALL fills the buffer on streams only (a datagram is one message).
  const bool all = (flags & MSG_WAITALL) != 0 && n > 0 && stream_socket(fd);
  if (all && (flags & MSG_PEEK) != 0) return peek_all(fd, buf, n, flags, from, len, deadline);
  const int once_flags = flags & ~MSG_WAITALL;
  std::size_t done = 0;
  for (;;) {
    const ssize_t r = receive(fd, static_cast<char*>(buf) + done, n - done, once_flags, from, len, deadline);
    if (r < 0) return done > 0 ? static_cast<ssize_t>(done) : -1;
    done += static_cast<std::size_t>(r);
    if (!all || r == 0 || done >= n) return static_cast<ssize_t>(done);
  }
}

ssize_t hooked_send(int fd, const void* buf, size_t n, int flags, const sockaddr* to, socklen_t len) {
  call_deadline deadline(fd, SO_SNDTIMEO);
  return send_fully(n, [&](std::size_t done) {
    return socket_call(fd, want_write, deadline, [&] {
      return libc_sendto(fd, static_cast<const char*>(buf) + done, n - done, flags | MSG_DONTWAIT, to, len);
    });
  });
}

// Vectored sends: on a blocking stream everything goes out unless an error, timeout or
// stop comes first (then the bytes sent so far are the result).
ssize_t hooked_sendmsg(int fd, const msghdr* m, int flags) {
  call_deadline deadline(fd, SO_SNDTIMEO);
  const std::size_t total = iov_total(m->msg_iov, m->msg_iovlen);
  iov_cursor rest(m->msg_iov, m->msg_iovlen);
  msghdr mine = *m;
  std::size_t done = 0;
  for (;;) {
    std::size_t n = 0;
    mine.msg_iov = const_cast<iovec*>(rest.next(n));
    mine.msg_iovlen = n;
    const ssize_t r =
        socket_call(fd, want_write, deadline, [&] { return libc_sendmsg(fd, &mine, flags | MSG_DONTWAIT); });
    if (r < 0) return done > 0 ? static_cast<ssize_t>(done) : -1;
    done += static_cast<std::size_t>(r);
    if (done >= total || r == 0) return static_cast<ssize_t>(done);
    rest.advance(static_cast<std::size_t>(r));
    mine.msg_control = nullptr;  // the control data went with the first bytes
    mine.msg_controllen = 0;
  }
}

ssize_t hooked_recvmsg(int fd, msghdr* m, int flags) {
  const std::size_t total = iov_total(m->msg_iov, m->msg_iovlen);
  if (total == 0 && stream_socket(fd))
    return receive_nothing([&] { return libc_recvmsg(fd, m, (flags & ~MSG_WAITALL) | MSG_DONTWAIT); });
  call_deadline deadline(fd, SO_RCVTIMEO);
  const ssize_t first =
      socket_call(fd, want_read, deadline, [&] { return libc_recvmsg(fd, m, (flags & ~MSG_WAITALL) | MSG_DONTWAIT); });
  const bool all = (flags & MSG_WAITALL) != 0 && (flags & MSG_PEEK) == 0 && stream_socket(fd);
  if (!all || first <= 0 || static_cast<std::size_t>(first) >= total) return first;
  // MSG_WAITALL on a stream: the rest of the buffer, entry by entry (control data and
  // the message flags came with the first part).
  std::size_t done = static_cast<std::size_t>(first);
  iov_cursor rest(m->msg_iov, m->msg_iovlen);
  rest.advance(done);
  const int try_flags = (flags & ~MSG_WAITALL) | MSG_DONTWAIT;
  while (done < total) {
    std::size_t n = 0;
    const iovec* v = rest.next(n);
    const ssize_t r = socket_call(fd, want_read, deadline, [&] {
      return libc_recvfrom(fd, v[0].iov_base, v[0].iov_len, try_flags, nullptr, nullptr);
    });
    if (r <= 0) break;
    done += static_cast<std::size_t>(r);
    rest.advance(static_cast<std::size_t>(r));
  }
  return static_cast<ssize_t>(done);
}

bool not_a_socket(ssize_t r) noexcept { return r < 0 && errno == ENOTSOCK; }

}  // namespace

// ---- the bridge ----

extern "C" __attribute__((visibility("default"))) void ringio_fiber_hooks_attach(
    const ringio_fiber_hook_bridge* b) noexcept {
  const ringio_fiber_hook_bridge* expected = nullptr;
  bridge.compare_exchange_strong(expected, b, std::memory_order_acq_rel);
}

#ifdef RINGIO_FIBER_HOOKS_LINKED
// Linked into the program with ringio::fiber: attach at start-up.
namespace {
const bool attached_at_startup = (ringio_fiber_hooks_attach(ringio_fiber_hook_bridge_get()), true);
}
// The program may reference this to make sure the hooks are linked in.
extern "C" int ringio_fiber_hooks_linked() noexcept { return attached_at_startup ? 1 : 0; }
#endif

// ---- the hooks ----

#define RINGIO_HOOK extern "C" __attribute__((visibility("default")))

RINGIO_HOOK ssize_t read(int fd, void* buf, size_t n) {
  if (!in_fiber()) return libc_read(fd, buf, n);
  const int saved = errno;
  const ssize_t r = hooked_recv(fd, buf, n, 0, nullptr, nullptr);
  if (!not_a_socket(r)) return keep_errno(saved, r);
  errno = saved;
  call_deadline none(fd, 0);
  return keep_errno(saved, nonblocking_call(fd, want_read, none, [&] { return libc_read(fd, buf, n); }));
}

RINGIO_HOOK ssize_t write(int fd, const void* buf, size_t n) {
  if (!in_fiber()) return libc_write(fd, buf, n);
  const int saved = errno;
  const ssize_t r = hooked_send(fd, buf, n, 0, nullptr, 0);
  if (!not_a_socket(r)) return keep_errno(saved, r);
  errno = saved;
  call_deadline none(fd, 0);
  return keep_errno(saved, send_fully(n, [&](std::size_t done) {
                      return nonblocking_call(fd, want_write, none, [&] {
                        return libc_write(fd, static_cast<const char*>(buf) + done, n - done);
                      });
                    }));
}

RINGIO_HOOK ssize_t readv(int fd, const iovec* iov, int n) {
  if (!in_fiber()) return libc_readv(fd, iov, n);
  const int saved = errno;
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = static_cast<std::size_t>(n < 0 ? 0 : n);
  if (n < 0 || n > IOV_MAX) return libc_readv(fd, iov, n);
  const ssize_t r = hooked_recvmsg(fd, &m, 0);
  if (!not_a_socket(r)) return keep_errno(saved, r);
  errno = saved;
  call_deadline none(fd, 0);
  return keep_errno(saved, nonblocking_call(fd, want_read, none, [&] { return libc_readv(fd, iov, n); }));
}

RINGIO_HOOK ssize_t writev(int fd, const iovec* iov, int n) {
  if (!in_fiber()) return libc_writev(fd, iov, n);
  if (n < 0 || n > IOV_MAX) return libc_writev(fd, iov, n);
  const int saved = errno;
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = static_cast<std::size_t>(n);
  const ssize_t r = hooked_sendmsg(fd, &m, 0);
  if (!not_a_socket(r)) return keep_errno(saved, r);
  errno = saved;
  // Not a socket (a pipe, a terminal): everything goes out too, piece by piece.
  call_deadline none(fd, 0);
  const std::size_t total = iov_total(iov, static_cast<std::size_t>(n));
  iov_cursor rest(iov, static_cast<std::size_t>(n));
  std::size_t done = 0;
  for (;;) {
    std::size_t k = 0;
    const iovec* v = rest.next(k);
    const ssize_t w = nonblocking_call(fd, want_write, none, [&] { return libc_writev(fd, v, static_cast<int>(k)); });
    if (w < 0) return done > 0 ? keep_errno(saved, static_cast<ssize_t>(done)) : -1;
    done += static_cast<std::size_t>(w);
    if (done >= total || w == 0) return keep_errno(saved, static_cast<ssize_t>(done));
    rest.advance(static_cast<std::size_t>(w));
  }
}

RINGIO_HOOK ssize_t recv(int fd, void* buf, size_t n, int flags) {
  if (!in_fiber() || (flags & (MSG_DONTWAIT | MSG_ERRQUEUE)) != 0) return libc_recv(fd, buf, n, flags);
  const int saved = errno;
  return keep_errno(saved, hooked_recv(fd, buf, n, flags, nullptr, nullptr));
}

RINGIO_HOOK ssize_t recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* from, socklen_t* len) {
  if (!in_fiber() || (flags & (MSG_DONTWAIT | MSG_ERRQUEUE)) != 0) return libc_recvfrom(fd, buf, n, flags, from, len);
  const int saved = errno;
  return keep_errno(saved, hooked_recv(fd, buf, n, flags, from, len));
}

RINGIO_HOOK ssize_t send(int fd, const void* buf, size_t n, int flags) {
  if (!in_fiber() || (flags & MSG_DONTWAIT) != 0) return libc_send(fd, buf, n, flags);
  const int saved = errno;
  return keep_errno(saved, hooked_send(fd, buf, n, flags, nullptr, 0));
}

RINGIO_HOOK ssize_t sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* to, socklen_t len) {
  if (!in_fiber() || (flags & MSG_DONTWAIT) != 0) return libc_sendto(fd, buf, n, flags, to, len);
  const int saved = errno;
  return keep_errno(saved, hooked_send(fd, buf, n, flags, to, len));
}

RINGIO_HOOK ssize_t recvmsg(int fd, msghdr* m, int flags) {
  if (!in_fiber() || (flags & (MSG_DONTWAIT | MSG_ERRQUEUE)) != 0) return libc_recvmsg(fd, m, flags);
  const int saved = errno;
  return keep_errno(saved, hooked_recvmsg(fd, m, flags));
}

RINGIO_HOOK ssize_t sendmsg(int fd, const msghdr* m, int flags) {
  if (!in_fiber() || (flags & MSG_DONTWAIT) != 0) return libc_sendmsg(fd, m, flags);
  const int saved = errno;
  return keep_errno(saved, hooked_sendmsg(fd, m, flags));
}

RINGIO_HOOK int connect(int fd, const sockaddr* a, socklen_t len) {
  if (!in_fiber()) return libc_connect(fd, a, len);
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || (fl & O_NONBLOCK) != 0) return libc_connect(fd, a, len);
  const int saved = errno;
  call_deadline deadline(fd, SO_SNDTIMEO);
  for (;;) {
    ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    const int r = libc_connect(fd, a, len);
    const int err = errno;
    ::fcntl(fd, F_SETFL, fl);
    errno = err;
    if (r == 0) return keep_errno(saved, r);
    if (err != EINPROGRESS && err != EAGAIN) return r;
    const long long left = deadline.left();
    // A full Unix-socket backlog has no readiness to wait for: look again every
    // millisecond. A TCP connect in progress is done when the socket is writable.
    const int rc = left == 0       ? -ETIMEDOUT
                   : err == EAGAIN ? deadline.after_wait(sleep_a_moment(left))
                                   : deadline.after_wait(the_bridge().wait(fd, want_write, left));
    if (rc != 0) {
      // The kernel reports a timed-out blocking connect as EINPROGRESS; an interrupted
      // one goes on in the background (EINTR), as after a signal.
      errno = rc == -ETIMEDOUT ? EINPROGRESS : -rc;
      return -1;
    }
    if (err == EAGAIN) continue;  // a full Unix-socket backlog: try again
    int so_error = 0;
    socklen_t l = sizeof so_error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &l) != 0) return -1;
    if (so_error != 0) {
      errno = so_error;
      return -1;
    }
    errno = saved;
    return 0;
  }
}

namespace {

// accept4 on a blocking listener in a fiber: one io_uring request where the loop has
// io_uring (the kernel waits for a connection), otherwise a try with O_NONBLOCK set
// for its duration and readiness waits.
int hooked_accept(int fd, sockaddr* a, socklen_t* len, int flags) {
  const int saved = errno;
  call_deadline deadline(fd, SO_RCVTIMEO);
  if (RINGIO_BRIDGE_HAS(ring_accept)) {
    if (user_nonblocking(fd)) return libc_accept4(fd, a, len, flags);
    const long long left = deadline.left();
    const int r = the_bridge().ring_accept(fd, a, len, flags, left);
    if (r != RINGIO_HOOK_NO_RING) return static_cast<int>(keep_errno(saved, from_ring(r)));
  }
  return static_cast<int>(
      keep_errno(saved, nonblocking_call(fd, want_read, deadline, [&] { return libc_accept4(fd, a, len, flags); })));
}

}  // namespace

RINGIO_HOOK int accept4(int fd, sockaddr* a, socklen_t* len, int flags) {
  if (!in_fiber()) return libc_accept4(fd, a, len, flags);
  return hooked_accept(fd, a, len, flags);
}

RINGIO_HOOK int accept(int fd, sockaddr* a, socklen_t* len) {
  if (!in_fiber()) return libc_accept(fd, a, len);
  return hooked_accept(fd, a, len, 0);
}

namespace {

int libc_ppoll(pollfd* fds, nfds_t n, const timespec* t, const sigset_t* mask) {
  RINGIO_REAL(ppoll);
  return real_fn(fds, n, t, mask);
}
int libc_select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* t) {
  RINGIO_REAL(select);
  return real_fn(n, r, w, e, t);
}
int libc_pselect(int n, fd_set* r, fd_set* w, fd_set* e, const timespec* t, const sigset_t* mask) {
  RINGIO_REAL(pselect);
  return real_fn(n, r, w, e, t, mask);
}
int libc_epoll_wait(int ep, epoll_event* ev, int max, int timeout) {
  RINGIO_REAL(epoll_wait);
  return real_fn(ep, ev, max, timeout);
}
int libc_epoll_pwait(int ep, epoll_event* ev, int max, int timeout, const sigset_t* mask) {
  RINGIO_REAL(epoll_pwait);
  return real_fn(ep, ev, max, timeout, mask);
}
int libc_epoll_pwait2(int ep, epoll_event* ev, int max, const timespec* t, const sigset_t* mask) {
  RINGIO_REAL(epoll_pwait2);
  return real_fn(ep, ev, max, t, mask);
}

int poll_events_to_wait(short events) noexcept {
  const bool r = (events & (POLLIN | POLLPRI | POLLRDHUP)) != 0;
  const bool w = (events & POLLOUT) != 0;
  if (r && !w) return want_read;
  if (w && !r) return want_write;
  return 0;
}

// A wait of this thread for several descriptors at once (poll, select): an epoll
// instance of its own, awaited for readability through the loop. While it waits, a
// close() on this thread of one of its descriptors wakes it (the kernel would silently
// drop the closed file from the instance, and the wait could last for ever).
class interest_set {
 public:
  using member_fn = bool (*)(const void* what, int fd) noexcept;

  interest_set(member_fn is_member, const void* what) noexcept
      : ep_(::epoll_create1(EPOLL_CLOEXEC)), is_member_(is_member), what_(what) {}
  ~interest_set() {
    if (ep_ < 0) return;
    the_bridge().closing(ep_);  // ringio forgets the number before it is reused
    libc_close(ep_);
  }
  interest_set(const interest_set&) = delete;
  interest_set& operator=(const interest_set&) = delete;

  /// -errno when the instance could not be made.
  int error() const noexcept { return ep_ < 0 ? -EMFILE : 0; }
  /// Adds `fd` for `events` (EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLRDHUP); 0 or errno.
  int add(int fd, std::uint32_t events) noexcept {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    return ::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : errno;
  }
  /// Replaces the events of a descriptor added before.
  void modify(int fd, std::uint32_t events) noexcept {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    ::epoll_ctl(ep_, EPOLL_CTL_MOD, fd, &ev);
  }
  /// Waits until a descriptor is ready: 0, or -ETIMEDOUT, -EINTR, -ECANCELED, and
  /// -EBADF when one of the descriptors was closed on this thread meanwhile.
  int wait(long long timeout_ns) noexcept {
    next_ = waits_head;
    waits_head = this;
    const int rc = the_bridge().wait(ep_, want_read, timeout_ns);
    interest_set** link = &waits_head;
    while (*link != this) link = &(*link)->next_;
    *link = next_;
    return member_closed_ ? -EBADF : rc;
  }

  /// Called by close(fd) on this thread: wakes the waits that include `fd`.
  static void closing(int fd) noexcept {
    for (interest_set* s = waits_head; s != nullptr; s = s->next_) {
      if (s->member_closed_ || !s->is_member_(s->what_, fd)) continue;
      s->member_closed_ = true;
      the_bridge().closing(s->ep_);  // ends the wait on the instance with -EBADF
    }
  }

 private:
  static inline __attribute__((tls_model("initial-exec"))) thread_local interest_set* waits_head = nullptr;

  int ep_;
  member_fn is_member_;
  const void* what_;
  bool member_closed_ = false;
  interest_set* next_ = nullptr;
};

struct poll_array {
  const pollfd* fds;
  nfds_t n;
};

bool in_poll_array(const void* what, int fd) noexcept {
  const auto* a = static_cast<const poll_array*>(what);
  for (nfds_t i = 0; i < a->n; ++i)
    if (a->fds[i].fd == fd) return true;
  return false;
}

int wait_any(pollfd* fds, nfds_t n, long long timeout_ns) {
  const poll_array what{fds, n};
  interest_set set(&in_poll_array, &what);
  if (const int e = set.error(); e != 0) return e;
  for (nfds_t i = 0; i < n; ++i) {
    if (fds[i].fd < 0) continue;
    auto events = static_cast<std::uint32_t>(fds[i].events & (POLLIN | POLLPRI | POLLOUT | POLLRDHUP));
    if (set.add(fds[i].fd, events) == EEXIST) {
      // The same descriptor twice: wait for the union of the events.
      for (nfds_t j = 0; j < i; ++j)
        if (fds[j].fd == fds[i].fd) events |= static_cast<std::uint32_t>(fds[j].events);
      set.modify(fds[i].fd, events);
    }
  }
  return set.wait(timeout_ns);
}

// Sleeps through the loop: 0 when the time passed, -EINTR or -ECANCELED.
int sleep_for_ns(long long timeout_ns) noexcept {
  long long rem = 0;
  return the_bridge().sleep(timeout_ns < 0 ? LLONG_MAX / 2 : timeout_ns, &rem);
}

// poll and ppoll in a fiber: `try_now()` polls without waiting; when nothing is ready,
// the fiber waits through the loop until one descriptor is, or the deadline passes.
template <class TryNow>
int poll_in_fiber(pollfd* fds, nfds_t n, call_deadline& deadline, TryNow try_now) {
  for (;;) {
    const int r = try_now();
    if (r != 0) return r;
    const long long left = deadline.left();
    if (left == 0) return 0;
    int rc;
    if (n == 0) {
      rc = sleep_for_ns(left);
      if (rc == 0) return 0;
    } else if (const int dir = n == 1 ? poll_events_to_wait(fds[0].events) : 0; dir != 0) {
      rc = the_bridge().wait(fds[0].fd, dir, left);
    } else {
      rc = wait_any(fds, n, left);
    }
    rc = deadline.after_wait(rc);
    if (rc == -ETIMEDOUT) return 0;
    if (rc == -EBADF) continue;  // closed meanwhile: the next try reports POLLNVAL
    if (rc != 0) {
      errno = -rc;
      return -1;
    }
  }
}

long long timespec_ns(const timespec& t) noexcept {
  return t.tv_sec > LLONG_MAX / 2000000000LL ? LLONG_MAX / 2 : t.tv_sec * 1000000000LL + t.tv_nsec;
}

bool valid_timespec(const timespec* t) noexcept {
  return t == nullptr || (t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1000000000L);
}

bool zero_timespec(const timespec* t) noexcept { return t != nullptr && t->tv_sec == 0 && t->tv_nsec == 0; }

// The descriptor sets of a select, as the program passed them in.
struct select_sets {
  int nfds;
  fd_set r, w, e;
  bool has_r, has_w, has_e;
};

bool in_select_sets(const void* what, int fd) noexcept {
  const auto* s = static_cast<const select_sets*>(what);
  if (fd < 0 || fd >= s->nfds) return false;
  return (s->has_r && FD_ISSET(fd, &s->r)) || (s->has_w && FD_ISSET(fd, &s->w)) || (s->has_e && FD_ISSET(fd, &s->e));
}

// select and pselect in a fiber: `try_now(r, w, e)` selects without waiting on the
// program's sets (restored before each try); when nothing is ready, the fiber waits
// through the loop for the descriptors of the sets, or the deadline.
template <class TryNow>
int select_in_fiber(int nfds, fd_set* r, fd_set* w, fd_set* e, call_deadline& deadline, TryNow try_now) {
  select_sets in{};
  in.nfds = nfds;
  in.has_r = r != nullptr;
  in.has_w = w != nullptr;
  in.has_e = e != nullptr;
  if (in.has_r) in.r = *r;
  if (in.has_w) in.w = *w;
  if (in.has_e) in.e = *e;
  const auto restore = [&] {
    if (in.has_r) *r = in.r;
    if (in.has_w) *w = in.w;
    if (in.has_e) *e = in.e;
  };
  for (bool first = true;; first = false) {
    if (!first) restore();
    const int n = try_now(r, w, e);
    if (n != 0) return n;
    const long long left = deadline.left();
    if (left == 0) return 0;
    int rc;
    bool any = false;
    for (int fd = 0; fd < nfds && !any; ++fd) any = in_select_sets(&in, fd);
    if (!any) {
      rc = sleep_for_ns(left);
      if (rc == 0) return 0;
    } else {
      interest_set set(&in_select_sets, &in);
      rc = set.error();
      for (int fd = 0; fd < nfds && rc == 0; ++fd) {
        std::uint32_t events = 0;
        if (in.has_r && FD_ISSET(fd, &in.r)) events |= EPOLLIN;
        if (in.has_w && FD_ISSET(fd, &in.w)) events |= EPOLLOUT;
        if (in.has_e && FD_ISSET(fd, &in.e)) events |= EPOLLPRI;
        if (events != 0) set.add(fd, events);  // a regular file is ready: the try said so
      }
      if (rc == 0) rc = set.wait(left);
    }
    rc = deadline.after_wait(rc);
    if (rc == -ETIMEDOUT) {
      if (in.has_r) FD_ZERO(r);
      if (in.has_w) FD_ZERO(w);
      if (in.has_e) FD_ZERO(e);
      return 0;
    }
    if (rc == -EBADF) continue;  // closed meanwhile: the next try fails with EBADF
    if (rc != 0) {
      restore();
      errno = -rc;
      return -1;
    }
  }
}

// epoll_wait and its variants in a fiber: `try_now()` takes what is ready without
// waiting; when nothing is, the fiber waits through the loop until the epoll instance
// itself is readable (something in it is ready), or the deadline.
template <class TryNow>
int epoll_in_fiber(int ep, call_deadline& deadline, TryNow try_now) {
  for (;;) {
    const int r = try_now();
    if (r != 0) return r;
    const long long left = deadline.left();
    if (left == 0) return 0;
    const int rc = deadline.after_wait(the_bridge().wait(ep, want_read, left));
    if (rc == -ETIMEDOUT) return 0;
    if (rc == -EBADF) continue;  // the instance was closed meanwhile: the next try says EBADF
    if (rc != 0) {
      errno = -rc;
      return -1;
    }
  }
}

}  // namespace

RINGIO_HOOK int poll(pollfd* fds, nfds_t n, int timeout) {
  if (!in_fiber() || timeout == 0) return libc_poll(fds, n, timeout);
  const int saved = errno;
  call_deadline deadline(-1, 0);
  deadline.set_timeout_ms(timeout);
  return keep_errno(saved, poll_in_fiber(fds, n, deadline, [&] { return libc_poll(fds, n, 0); }));
}

RINGIO_HOOK int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask) {
  if (!in_fiber() || zero_timespec(timeout) || !valid_timespec(timeout)) return libc_ppoll(fds, n, timeout, mask);
  const int saved = errno;
  call_deadline deadline(-1, 0);
  deadline.set_timeout_ns(timeout != nullptr ? timespec_ns(*timeout) : -1);
  const timespec zero{};
  return keep_errno(saved, poll_in_fiber(fds, n, deadline, [&] { return libc_ppoll(fds, n, &zero, mask); }));
}

RINGIO_HOOK int select(int nfds, fd_set* r, fd_set* w, fd_set* e, timeval* timeout) {
  if (!in_fiber() || nfds < 0 || nfds > FD_SETSIZE ||
      (timeout != nullptr && (timeout->tv_sec < 0 || timeout->tv_usec < 0 || timeout->tv_usec >= 1000000 ||
                              (timeout->tv_sec == 0 && timeout->tv_usec == 0))))
    return libc_select(nfds, r, w, e, timeout);
  call_deadline deadline(-1, 0);
  deadline.set_timeout_ns(timeout != nullptr ? (timeout->tv_sec > LLONG_MAX / 2000000000LL
                                                    ? LLONG_MAX / 2
                                                    : timeout->tv_sec * 1000000000LL + timeout->tv_usec * 1000LL)
                                             : -1);
  const int n = select_in_fiber(nfds, r, w, e, deadline, [&](fd_set* rr, fd_set* ww, fd_set* ee) {
    timeval zero{};
    return libc_select(nfds, rr, ww, ee, &zero);
  });
  if (timeout != nullptr) {  // Linux leaves the time not slept in the timeval
    const long long left = deadline.left();
    timeout->tv_sec = static_cast<time_t>(left / 1000000000LL);
    timeout->tv_usec = static_cast<suseconds_t>(left % 1000000000LL / 1000);
  }
  return n;
}

RINGIO_HOOK int pselect(int nfds, fd_set* r, fd_set* w, fd_set* e, const timespec* timeout, const sigset_t* mask) {
  if (!in_fiber() || nfds < 0 || nfds > FD_SETSIZE || zero_timespec(timeout) || !valid_timespec(timeout))
    return libc_pselect(nfds, r, w, e, timeout, mask);
  call_deadline deadline(-1, 0);
  deadline.set_timeout_ns(timeout != nullptr ? timespec_ns(*timeout) : -1);
  return select_in_fiber(nfds, r, w, e, deadline, [&](fd_set* rr, fd_set* ww, fd_set* ee) {
    const timespec zero{};
    return libc_pselect(nfds, rr, ww, ee, &zero, mask);
  });
}

RINGIO_HOOK int epoll_wait(int ep, epoll_event* events, int max, int timeout) {
  if (!in_fiber() || timeout == 0) return libc_epoll_wait(ep, events, max, timeout);
  call_deadline deadline(-1, 0);
  deadline.set_timeout_ms(timeout);
  return epoll_in_fiber(ep, deadline, [&] { return libc_epoll_wait(ep, events, max, 0); });
}

RINGIO_HOOK int epoll_pwait(int ep, epoll_event* events, int max, int timeout, const sigset_t* mask) {
  if (!in_fiber() || timeout == 0) return libc_epoll_pwait(ep, events, max, timeout, mask);
  call_deadline deadline(-1, 0);
  deadline.set_timeout_ms(timeout);
  return epoll_in_fiber(ep, deadline, [&] { return libc_epoll_pwait(ep, events, max, 0, mask); });
}

RINGIO_HOOK int epoll_pwait2(int ep, epoll_event* events, int max, const timespec* timeout, const sigset_t* mask) {
  if (!in_fiber() || zero_timespec(timeout) || !valid_timespec(timeout))
    return libc_epoll_pwait2(ep, events, max, timeout, mask);
  call_deadline deadline(-1, 0);
  deadline.set_timeout_ns(timeout != nullptr ? timespec_ns(*timeout) : -1);
  const timespec zero{};
  return epoll_in_fiber(ep, deadline, [&] { return libc_epoll_pwait2(ep, events, max, &zero, mask); });
}

namespace {

int libc_getaddrinfo(const char* node, const char* service, const addrinfo* hints, addrinfo** res) {
  static constinit next_definition real_definition("getaddrinfo");
  const auto real_fn = reinterpret_cast<decltype(&::getaddrinfo)>(real_definition.get());
  if (real_fn == nullptr) [[unlikely]] {
    errno = ENOSYS;
    return EAI_SYSTEM;
  }
  return real_fn(node, service, hints, res);
}

// One name lookup run on the blocking pool: it owns copies of its arguments, and its
// result until the fiber takes it (or, the fiber stopped, until it is discarded).
struct lookup {
  char* node = nullptr;
  char* service = nullptr;
  addrinfo hints{};
  bool has_hints = false;
  int rc = EAI_SYSTEM;
  int err = 0;
  addrinfo* result = nullptr;
};

void free_lookup(lookup* l) noexcept {
  std::free(l->node);
  std::free(l->service);
  delete l;
}

void run_lookup(void* p) {
  auto* l = static_cast<lookup*>(p);
  l->rc = libc_getaddrinfo(l->node, l->service, l->has_hints ? &l->hints : nullptr, &l->result);
  l->err = errno;
  if (l->rc != 0) l->result = nullptr;
}

void discard_lookup(void* p) {
  auto* l = static_cast<lookup*>(p);
  if (l->result != nullptr) ::freeaddrinfo(l->result);
  free_lookup(l);
}

bool numeric_host(const char* node, int flags) noexcept {
  if (node == nullptr || (flags & AI_NUMERICHOST) != 0) return true;
  unsigned char addr[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, node, addr) == 1 || ::inet_pton(AF_INET6, node, addr) == 1;
}

bool numeric_service(const char* service, int flags) noexcept {
  if (service == nullptr || (flags & AI_NUMERICSERV) != 0) return true;
  if (*service == '\0') return false;
  for (const char* c = service; *c != '\0'; ++c)
    if (*c < '0' || *c > '9') return false;
  return true;
}

bool bridge_runs_blocking(const ringio_fiber_hook_bridge& b) noexcept {
  return b.size >= offsetof(ringio_fiber_hook_bridge, run_blocking) + sizeof b.run_blocking &&
         b.run_blocking != nullptr;
}

}  // namespace

RINGIO_HOOK int getaddrinfo(const char* node, const char* service, const addrinfo* hints, addrinfo** res) {
  if (!in_fiber() || res == nullptr) return libc_getaddrinfo(node, service, hints, res);
  const int flags = hints != nullptr ? hints->ai_flags : 0;
  // Numbers are parsed, not looked up: no I/O, no reason to leave the fiber.
  if (numeric_host(node, flags) && numeric_service(service, flags)) return libc_getaddrinfo(node, service, hints, res);
  const ringio_fiber_hook_bridge& b = the_bridge();
  if (!bridge_runs_blocking(b)) return libc_getaddrinfo(node, service, hints, res);
  const int saved = errno;
  auto* l = new (std::nothrow) lookup;
  if (l == nullptr) return EAI_MEMORY;
  if (hints != nullptr) {  // POSIX: only these four members of the hints count
    l->has_hints = true;
    l->hints.ai_flags = hints->ai_flags;
    l->hints.ai_family = hints->ai_family;
    l->hints.ai_socktype = hints->ai_socktype;
    l->hints.ai_protocol = hints->ai_protocol;
  }
  l->node = node != nullptr ? ::strdup(node) : nullptr;
  l->service = service != nullptr ? ::strdup(service) : nullptr;
  if ((node != nullptr && l->node == nullptr) || (service != nullptr && l->service == nullptr)) {
    free_lookup(l);
    return EAI_MEMORY;
  }
  const int rc = b.run_blocking(&run_lookup, &discard_lookup, l);
  if (rc != 0) {  // `l` is the bridge's now
    if (rc == -EAGAIN) return EAI_AGAIN;
    if (rc == -ENOMEM) return EAI_MEMORY;
    errno = -rc;  // EINTR: stopped during the lookup; ECANCELED: stopped before
    return EAI_SYSTEM;
  }
  const int result = l->rc;
  if (result == 0) *res = l->result;
  errno = result == EAI_SYSTEM ? l->err : saved;
  free_lookup(l);
  return result;
}

RINGIO_HOOK int nanosleep(const timespec* req, timespec* rem) {
  if (!in_fiber()) return libc_nanosleep(req, rem);
  if (req == nullptr || req->tv_nsec < 0 || req->tv_nsec >= 1000000000L || req->tv_sec < 0) {
    errno = EINVAL;
    return -1;
  }
  long long left = 0;
  const long long ns =
      req->tv_sec > LLONG_MAX / 2000000000LL ? LLONG_MAX / 2 : req->tv_sec * 1000000000LL + req->tv_nsec;
  const int rc = the_bridge().sleep(ns, &left);
  if (rc == 0) return 0;
  if (rem != nullptr) {
    rem->tv_sec = static_cast<time_t>(left / 1000000000LL);
    rem->tv_nsec = static_cast<long>(left % 1000000000LL);
  }
  errno = -rc;
  return -1;
}

RINGIO_HOOK int clock_nanosleep(clockid_t clock, int flags, const timespec* req, timespec* rem) {
  static constinit next_definition real_definition("clock_nanosleep");
  const auto real_fn = reinterpret_cast<decltype(&::clock_nanosleep)>(real_definition.get());
  if (!in_fiber() || (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME && clock != CLOCK_BOOTTIME))
    return real_fn != nullptr ? real_fn(clock, flags, req, rem) : ENOSYS;
  if (req == nullptr || req->tv_nsec < 0 || req->tv_nsec >= 1000000000L || req->tv_sec < 0) return EINVAL;
  const auto to_ns = [](const timespec& t) {
    return t.tv_sec > LLONG_MAX / 2000000000LL ? LLONG_MAX / 2 : t.tv_sec * 1000000000LL + t.tv_nsec;
  };
  long long ns = to_ns(*req);
  const bool absolute = (flags & TIMER_ABSTIME) != 0;
  if (absolute) {
    timespec now{};
    ::clock_gettime(clock, &now);
    ns -= to_ns(now);
    if (ns <= 0) return 0;
  }
  long long left = 0;
  const int rc = the_bridge().sleep(ns, &left);
  if (rc == 0) return 0;
  if (rem != nullptr && !absolute) {
    rem->tv_sec = static_cast<time_t>(left / 1000000000LL);
    rem->tv_nsec = static_cast<long>(left % 1000000000LL);
  }
  return -rc;  // clock_nanosleep returns the error number
}

RINGIO_HOOK int usleep(useconds_t us) {
  if (!in_fiber()) return libc_usleep(us);
  long long left = 0;
  const int rc = the_bridge().sleep(static_cast<long long>(us) * 1000, &left);
  if (rc == 0) return 0;
  errno = -rc;
  return -1;
}

RINGIO_HOOK unsigned sleep(unsigned s) {
  if (!in_fiber()) return libc_sleep(s);
  long long left = 0;
  if (the_bridge().sleep(static_cast<long long>(s) * 1000000000LL, &left) == 0) return 0;
  return static_cast<unsigned>((left + 999999999LL) / 1000000000LL);
}

RINGIO_HOOK int close(int fd) {
  if (const ringio_fiber_hook_bridge* b = bridge.load(std::memory_order_acquire); b != nullptr && fd >= 0) {
    const int saved = errno;
    interest_set::closing(fd);
    b->closing(fd);
    errno = saved;
  }
  return libc_close(fd);
}
