// SPDX-License-Identifier: Apache-2.0
// min_wait_enter — the blocking io_uring_enter with a minimum wait (Linux 6.12,
// IORING_FEAT_MIN_TIMEOUT), which liburing 2.3 cannot express: the kernel waits up to
// min_wait_usec for wait_nr completions, then returns once at least one is there; with
// none it waits on until `ts`. A completed IORING_OP_TIMEOUT ends the wait at once.
#pragma once

#include <liburing.h>

namespace ringio::detail {

/// Submits the queued SQEs and waits as described above, in one `io_uring_enter(2)`.
/// `ts` is relative. Not for SQPOLL rings. Returns what the syscall returns (the number
/// submitted) or -errno (-ETIME when `ts` passed).
int submit_and_wait_min(io_uring& ring, unsigned wait_nr, const __kernel_timespec& ts, unsigned min_wait_usec) noexcept;

}  // namespace ringio::detail
