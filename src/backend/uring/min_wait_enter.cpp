// SPDX-License-Identifier: Apache-2.0
#include "backend/uring/min_wait_enter.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "backend/uring/uring_compat.hpp"

namespace ringio::detail {
namespace {

// liburing 2.3 marks a registered ring fd with this bit of int_flags.
constexpr unsigned char ring_fd_registered = 1;

// Publishes the SQEs prepared since the last submit (as liburing does before it enters)
// and returns how many the kernel has not consumed yet.
unsigned flush_sq(io_uring& ring) noexcept {
  io_uring_sq& sq = ring.sq;
  const unsigned tail = sq.sqe_tail;
  if (sq.sqe_head != tail) {
    sq.sqe_head = tail;
    __atomic_store_n(sq.ktail, tail, __ATOMIC_RELEASE);
  }
  return tail - __atomic_load_n(sq.khead, __ATOMIC_ACQUIRE);
}

}  // namespace

int submit_and_wait_min(io_uring& ring, unsigned wait_nr, const __kernel_timespec* ts, unsigned min_wait_usec,
                        unsigned extra_flags) noexcept {
  const unsigned to_submit = flush_sq(ring);
  getevents_arg_min_wait arg;
  arg.sigmask_sz = _NSIG / 8;
  arg.min_wait_usec = min_wait_usec;
  arg.ts = reinterpret_cast<__u64>(ts);  // 0: no time limit
  unsigned flags = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG | extra_flags;
  if ((ring.flags & IORING_SETUP_SQPOLL) != 0) {
    // The SQ thread may sleep: wake it for what was just published (as liburing does).
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if ((__atomic_load_n(ring.sq.kflags, __ATOMIC_RELAXED) & IORING_SQ_NEED_WAKEUP) != 0)
      flags |= IORING_ENTER_SQ_WAKEUP;
  }
  int fd = ring.ring_fd;
  if ((ring.int_flags & ring_fd_registered) != 0) {
    flags |= IORING_ENTER_REGISTERED_RING;
    fd = ring.enter_ring_fd;
  }
  long r = ::syscall(__NR_io_uring_enter, fd, to_submit, wait_nr, flags, &arg, sizeof arg);
  return r < 0 ? -errno : static_cast<int>(r);
}

}  // namespace ringio::detail
