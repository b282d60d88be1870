// SPDX-License-Identifier: Apache-2.0
// uring_compat — the one place that reaches io_uring features newer than Debian's
// liburing 2.3: constants behind #ifndef, raw structs where liburing has no helper.
#pragma once

#include <liburing.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)
#endif
#ifndef IOU_PBUF_RING_INC
#define IOU_PBUF_RING_INC 2
#endif
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif
#ifndef IORING_CQE_F_BUF_MORE
#define IORING_CQE_F_BUF_MORE (1U << 4)
#endif
#ifndef IORING_ASYNC_CANCEL_FD_FIXED
#define IORING_ASYNC_CANCEL_FD_FIXED (1U << 3)
#endif
#ifndef IORING_FEAT_RECVSEND_BUNDLE
#define IORING_FEAT_RECVSEND_BUNDLE (1U << 14)
#endif
#ifndef IORING_FEAT_MIN_TIMEOUT
#define IORING_FEAT_MIN_TIMEOUT (1U << 15)
#endif
#ifndef IORING_ENTER_NO_IOWAIT
#define IORING_ENTER_NO_IOWAIT (1U << 7)
#endif
#ifndef IORING_FEAT_NO_IOWAIT
#define IORING_FEAT_NO_IOWAIT (1U << 17)
#endif
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

namespace ringio::detail {

/// IORING_OP_FIXED_FD_INSTALL (6.8): installs a direct descriptor as a normal one.
/// Not in liburing 2.3's enum.
inline constexpr int op_fixed_fd_install = 54;

/// Opcodes newer than liburing 2.3's enum, for the probe ringio-doctor reports.
inline constexpr int op_waitid = 50;          ///< IORING_OP_WAITID (6.7)
inline constexpr int op_futex_wait = 51;      ///< IORING_OP_FUTEX_WAIT (6.7)
inline constexpr int op_futex_wake = 52;      ///< IORING_OP_FUTEX_WAKE (6.7)
inline constexpr int op_ftruncate = 55;       ///< IORING_OP_FTRUNCATE (6.9)
inline constexpr int op_read_multishot = 49;  ///< IORING_OP_READ_MULTISHOT (6.7)
/// Flags of IORING_OP_FUTEX_WAIT/WAKE (the futex2 ones, in the SQE's fd field).
inline constexpr unsigned futex2_size_u32 = 0x02;  ///< FUTEX2_SIZE_U32
inline constexpr unsigned futex2_private = 128;    ///< FUTEX2_PRIVATE
/// IORING_OP_EPOLL_WAIT (6.15): epoll_wait(2) on an epoll descriptor as a request.
inline constexpr int op_epoll_wait = 59;

/// IORING_REGISTER_RESIZE_RINGS (6.13): new SQ and CQ sizes for a DEFER_TASKRUN ring
/// (an enum value, not a macro, in newer headers). Not in liburing 2.3's enum.
inline constexpr unsigned register_resize_rings = 33;

/// IORING_TIMEOUT_MULTISHOT (6.4): a timeout that fires again and again.
inline constexpr unsigned timeout_multishot = 1U << 6;

/// struct io_uring_getevents_arg as Linux 6.12 lays it out: `min_wait_usec` took the
/// place of liburing 2.3's `pad`.
struct getevents_arg_min_wait {
  __u64 sigmask = 0;
  __u32 sigmask_sz = 0;
  __u32 min_wait_usec = 0;
  __u64 ts = 0;
};
static_assert(sizeof(getevents_arg_min_wait) == sizeof(io_uring_getevents_arg));

/// user_data tags: operations are 8-byte aligned, the low bits say which CQE this is.
enum : unsigned long long {
  ud_tag_main = 0,      ///< the operation's own request
  ud_tag_cancel = 1,    ///< an ASYNC_CANCEL aimed at the operation
  ud_tag_link = 2,      ///< the operation's linked timeout
  ud_tag_internal = 3,  ///< a request of the backend itself (wake-up read)
  ud_tag_mask = 7,
  /// A CQE another ring posted here with IORING_OP_MSG_RING to wake this loop.
  ud_wake_message = 4,
  /// Our MSG_RING towards another ring failed (the CQE comes only on failure); the
  /// target's ring fd is in the bits above the tag.
  ud_tag_wake_failed = 5,
  /// The CQE of a synchronous IORING_OP_FIXED_FD_INSTALL, waited for in place.
  ud_direct_install = 6,
};

/// io_uring_enable_rings() is missing from liburing 2.3's shared library; call the
/// register syscall directly. Returns 0 or -errno.
inline int enable_rings(io_uring& ring) noexcept {
  long r = ::syscall(__NR_io_uring_register, ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0);
  return r < 0 ? -errno : 0;
}

/// Sets io_uring_buf_reg's flags (IOU_PBUF_RING_*): liburing 2.3 still calls that
/// 16-bit field `pad`, newer headers `flags`; it follows `bgid` either way.
inline void set_buf_reg_flags(io_uring_buf_reg& reg, unsigned short flags) noexcept {
  static_assert(sizeof(reg.bgid) == 2 && offsetof(io_uring_buf_reg, bgid) == 12);
  std::memcpy(reinterpret_cast<unsigned char*>(&reg) + 14, &flags, sizeof flags);
}

}  // namespace ringio::detail
