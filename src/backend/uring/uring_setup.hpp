// SPDX-License-Identifier: Apache-2.0
// uring_setup — creating the ring with the fastest flags the kernel accepts, and the
// feature probe that names whatever is missing.
#pragma once

#include <liburing.h>

#include <string>

#include "ringio/io_context.hpp"

namespace ringio::detail {

struct ring_setup {
  unsigned flags = 0;     ///< IORING_SETUP_* the ring was created with
  unsigned features = 0;  ///< params.features
  unsigned sq_entries = 0;
  unsigned cq_entries = 0;
  bool disabled = false;          ///< created with R_DISABLED: enable on the loop's thread
  bool msg_ring = false;          ///< IORING_OP_MSG_RING available (ring-to-ring wake-ups)
  bool fixed_fd_install = false;  ///< IORING_OP_FIXED_FD_INSTALL available (direct descriptors)
  bool recv_bundle = false;       ///< IORING_RECVSEND_BUNDLE accepted (Linux 6.10)
  bool pbuf_inc = false;          ///< buffer rings may be registered IOU_PBUF_RING_INC (6.12)
  bool send_zc = false;           ///< IORING_OP_SEND_ZC available (zero-copy sends)
  bool min_wait = false;          ///< IORING_FEAT_MIN_TIMEOUT: io_uring_enter takes a minimum wait
  bool no_iowait = false;         ///< IORING_FEAT_NO_IOWAIT: a wait may be kept out of I/O wait (6.15)
  /// The ring started small and may grow up to these sizes (0: it has its full size).
  unsigned max_sq_entries = 0;
  unsigned max_cq_entries = 0;
  /// Why the ring does not grow: "off", "unsupported", "needs defer_taskrun" (the ring
  /// lacks IORING_SETUP_DEFER_TASKRUN: option off, or SQPOLL), "not
  /// needed" (the sizes asked for are no larger than the start); nullptr when it does.
  const char* no_resize_reason = nullptr;
};

/// Creates the ring; on EINVAL drops optional flags one by one. With
/// io_context_options::ring_resize on a kernel that resizes rings, the ring starts at
/// resize_start_sq/cq entries (at most the sizes asked for) and the sizes asked for are
/// its max_sq_entries/max_cq_entries. Throws
/// backend_setup_error naming the failing call or the missing opcode/feature.
ring_setup create_ring(io_uring& ring, const io_context_options& opts);

/// "SINGLE_ISSUER|DEFER_TASKRUN|..." for the report.
std::string describe_setup_flags(unsigned flags);

}  // namespace ringio::detail
