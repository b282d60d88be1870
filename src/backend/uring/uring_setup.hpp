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
};

/// Creates the ring; on EINVAL drops optional flags one by one. Throws
/// backend_setup_error naming the failing call or the missing opcode/feature.
ring_setup create_ring(io_uring& ring, const io_context_options& opts);

/// "SINGLE_ISSUER|DEFER_TASKRUN|..." for the report.
std::string describe_setup_flags(unsigned flags);

}  // namespace ringio::detail
