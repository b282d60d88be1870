// SPDX-License-Identifier: Apache-2.0
// ringio/detail/bundle_send_op.hpp — one send bundle: IORING_OP_SEND with
// IORING_RECVSEND_BUNDLE, taking its bytes from the entries of a provided-buffer ring
// (send_bundle_ring) rather than from a buffer of its own.
#pragma once

#include <cstddef>
#include <system_error>

#include "ringio/detail/io_operation.hpp"
#include "ringio/result.hpp"

namespace ringio::detail {

extern const op_vtable bundle_send_vtable;

/// Sends, in one request, as many of the ring's entries of buffer group `group` as the
/// socket takes, from the ring's head; the result is the bytes sent (the entries that
/// cover them are consumed, the last one possibly in part), or the error when none were.
/// io_uring completion backend only: elsewhere it fails with operation_not_supported.
class bundle_send_op : public io_operation<bundle_send_op> {
 public:
  /// A send on `fd_` from buffer group `group_`.
  bundle_send_op(int fd_, unsigned group_, std::size_t expected_) noexcept
      : io_operation(&bundle_send_vtable), group(group_), expected(expected_) {
    fd = fd_;
    want = interest::writable;
    counts_bytes = true;
  }
  bundle_send_op(const bundle_send_op&) = default;

  /// The bytes sent, or the error when none were. Stopped before every byte was out:
  /// operation_canceled even when some were (the kernel reports the bytes of a
  /// cancelled bundle, not the cancel).
  result<std::size_t> get_result() const noexcept {
    if (sent < expected && cancel_requested) return unexpected(std::make_error_code(std::errc::operation_canceled));
    if (sent > 0) return sent;
    if (res < 0) return unexpected(op_error(*this));
    return std::size_t{0};
  }

  unsigned group;        ///< the send ring's buffer group
  std::size_t expected;  ///< bytes the ring holds
  std::size_t sent = 0;  ///< bytes sent over every completion of the request
};

}  // namespace ringio::detail
