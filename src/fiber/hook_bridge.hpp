// SPDX-License-Identifier: Apache-2.0
// The C interface between ringio::fiber and the system-call hooks (src/fiber_hooks):
// the hooks know nothing of ringio's C++ types, so one hooks library works linked into
// a program and preloaded into one (docs/fibers.md, "Hooks").
#pragma once

extern "C" {

/// What a program's ringio offers the hooks. Every function runs on the calling thread.
struct ringio_fiber_hook_bridge {
  /// sizeof(ringio_fiber_hook_bridge) of the ringio that made it: a member that ends
  /// past it is absent (a hooks library newer than the program's ringio).
  unsigned long size;
  /// The address of the calling thread's "fiber running now" slot: non-null contents
  /// while a fiber runs on this thread.
  void* const* (*running_fiber_slot)();
  /// Suspends the running fiber until `fd` is readable (events 1) or writable (2), or
  /// `timeout_ns` (negative: none) passed. 0 when ready; -ETIMEDOUT; -EINTR when the
  /// fiber was stopped during the wait; -ECANCELED when it was stopped before; -EBADF
  /// when the descriptor was closed meanwhile (closing()) or is not open.
  int (*wait)(int fd, int events, long long timeout_ns);
  /// Suspends the running fiber for `ns`. 0, -EINTR or -ECANCELED as wait();
  /// `*remaining_ns` gets what was left when interrupted.
  int (*sleep)(long long ns, long long* remaining_ns);
  /// Called before `fd` is closed, from any thread: the waits on `fd` of this thread's
  /// fibers end with -EBADF, and ringio forgets its registration of the number.
  void (*closing)(int fd);
  /// Runs `fn(arg)` on the loop's default blocking pool while the running fiber
  /// suspends. 0 when `fn` ran to its end: `arg` is the caller's again. Otherwise `arg`
  /// is the bridge's, which calls `discard(arg)` once `fn` has finished or is known never
  /// to run (on the loop's thread or a pool thread): -EINTR when the fiber was stopped
  /// during the wait, -ECANCELED when it was stopped before, -EAGAIN when the pool's
  /// queue is full, -ENOMEM.
  int (*run_blocking)(void (*fn)(void*), void (*discard)(void*), void* arg);
  /// Receives into `buf` from socket `fd` as one io_uring request of the running
  /// fiber's loop (IORING_OP_RECV with `flags`): the kernel waits for data and copies
  /// it, so a blocking read costs no readiness round trip. Bytes (>= 0) or -errno; the
  /// errors of wait(); RINGIO_HOOK_NO_RING when the loop is not io_uring's completion
  /// backend (nothing was done: wait for readiness instead).
  long (*ring_recv)(int fd, void* buf, unsigned long n, int flags, long long timeout_ns);
  /// accept4(fd, addr, addrlen, flags) as one io_uring request (IORING_OP_ACCEPT), as
  /// ring_recv(): the new descriptor or -errno, RINGIO_HOOK_NO_RING.
  int (*ring_accept)(int fd, void* addr, void* addrlen, int flags, long long timeout_ns);
};

/// ring_recv() and ring_accept(): not available on this loop.
#define RINGIO_HOOK_NO_RING (-0x7fff0000)

/// The bridge of the ringio linked into this program.
const ringio_fiber_hook_bridge* ringio_fiber_hook_bridge_get() noexcept;

/// Defined by the hooks library; ringio::fiber looks it up (dlsym) when its first fiber
/// starts and hands it the bridge, so a preloaded hooks library finds the program's ringio.
void ringio_fiber_hooks_attach(const ringio_fiber_hook_bridge* bridge) noexcept;
}
