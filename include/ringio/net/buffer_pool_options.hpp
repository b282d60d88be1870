// SPDX-License-Identifier: Apache-2.0
// ringio/net/buffer_pool_options.hpp — optional io_uring receive features of a
// buffer_pool. Each one is used only where the kernel offers it (the probe at the
// io_context's start; io_context::describe() names them); the readiness backends ignore
// them.
#pragma once

namespace ringio {

/// How a buffer_pool's buffers are handed to the kernel. Measurements behind the
/// defaults: docs/performance.md ("Receive bundles", "Incremental buffers").
struct buffer_pool_options {
  /// Receive bundles (IORING_RECVSEND_BUNDLE, Linux 6.10): one completion of a
  /// multishot_receiver carries several consecutive buffers when more data waits in the
  /// socket than one buffer holds; next() then hands them out one by one (next_ready()
  /// takes the rest without waiting). Wins when data arrives faster than one buffer per
  /// completion (echo of 64 KiB messages into 16 KiB buffers: about a quarter less
  /// server CPU per message); request/response traffic whose messages fit in a buffer
  /// never forms a bundle and runs as without. On by default.
  bool bundle = true;
  /// Incremental consumption (IOU_PBUF_RING_INC, Linux 6.12): the kernel fills each
  /// buffer piece by piece, one arrival after the other, so a small message takes only
  /// its own bytes of a buffer instead of a whole one; the pooled_buffers handed out are
  /// slices, and a buffer goes back to the kernel once it is full and every slice of it
  /// has been released. Lets a pool of a few large buffers serve many connections
  /// exchanging small messages: 10,000 echo connections with 16-byte messages took
  /// 27% less server memory. Off by default: messages as large as a buffer then straddle
  /// two buffers (ping/pong with 16 KiB blocks in 16 KiB buffers cost up to 30% more
  /// CPU), and a slice held for long keeps its whole buffer out of use.
  bool incremental = false;
  /// How many buffers the kernel's ring offers at first (0: all of them; ignored with
  /// incremental consumption). The kernel takes buffers in ring order and returned ones
  /// go to the ring's tail, so with every buffer in the ring each one is written in turn
  /// (and made resident) even when only a few are ever in use at once. With a smaller
  /// ring, buffers that come back while the ring is full wait on a stack and refill it
  /// as the kernel takes from it: only about this many buffers plus those in use are
  /// ever touched. Whenever a receive finds the ring empty (no_buffer_space) while
  /// buffers wait on the stack, the ring's size doubles, up to the pool's count.
  unsigned initial_ring_buffers = 0;
};

}  // namespace ringio
