// SPDX-License-Identifier: Apache-2.0
// ring_resize — growing a ring's SQ and CQ in place (IORING_REGISTER_RESIZE_RINGS,
// Linux 6.13) and mapping the new rings into liburing 2.3's struct io_uring, which has
// no helper for it.
#pragma once

#include <liburing.h>

#include <cstddef>

namespace ringio::detail {

/// SQ and CQ entries a ring that may grow starts with.
inline constexpr unsigned resize_start_sq = 256;
inline constexpr unsigned resize_start_cq = 1024;

/// Whether this kernel resizes a ring (one probe per process, on a ring of its own that
/// goes through resize_ring() with a request queued and completes it afterwards).
bool kernel_resizes_rings() noexcept;

/// Gives `ring` (a DEFER_TASKRUN ring, no SQPOLL) `sq_entries` and `cq_entries`. SQEs
/// queued and not yet submitted are published first, so the kernel copies them with
/// the CQEs not yet reaped; the new rings are then mapped in place of the old ones and
/// the local SQ positions kept. Any SQE pointer taken before the call is stale after it.
/// `features`: the ring's params.features. 0, or -errno: from the kernel, the ring is
/// unchanged; from mapping the new rings (ENOMEM), the ring can no longer be used.
/// `*remap_failed` says which.
int resize_ring(io_uring& ring, unsigned sq_entries, unsigned cq_entries, unsigned features,
                bool* remap_failed) noexcept;

/// Bytes of the ring's mappings (SQ and CQ rings, SQE array): the memory a ring costs.
std::size_t ring_mapped_bytes(const io_uring& ring) noexcept;

}  // namespace ringio::detail
