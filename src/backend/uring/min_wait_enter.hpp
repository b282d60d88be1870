// SPDX-License-Identifier: Apache-2.0
// min_wait_enter — the blocking io_uring_enter with what liburing 2.3 cannot express: a
// minimum wait (Linux 6.12, IORING_FEAT_MIN_TIMEOUT: the kernel waits up to
// min_wait_usec for wait_nr completions, then returns once at least one is there; with
// none it waits on until `ts`; a completed IORING_OP_TIMEOUT ends the wait at once) and
// extra enter flags such as IORING_ENTER_NO_IOWAIT (6.15).
#pragma once

#include <liburing.h>

namespace ringio::detail {

/// Submits the queued SQEs and waits as described above, in one `io_uring_enter(2)`.
/// `ts` is relative; nullptr waits without a time limit. `extra_flags` are OR-ed into
/// the enter flags. Returns what the syscall returns (the number submitted) or -errno
/// (-ETIME when `ts` passed).
int submit_and_wait_min(io_uring& ring, unsigned wait_nr, const __kernel_timespec* ts, unsigned min_wait_usec,
                        unsigned extra_flags = 0) noexcept;

}  // namespace ringio::detail
