// SPDX-License-Identifier: Apache-2.0
// The checks of ringio::any_opcode: what ringio can submit and track for a request it
// did not prepare itself.
#include <liburing.h>

#include <cerrno>

#include "backend/uring/opcode_probe.hpp"
#include "backend/uring/uring_compat.hpp"
#include "ringio/detail/any_opcode_op.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {
namespace {

// Flags that would tie the request to others, hold up every later one (the loop keeps
// a read armed for wake-ups, so a drain could wait forever), drop its completion, or
// consume a provided buffer no ringio pool accounts for.
constexpr unsigned refused_flags =
    IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_IO_DRAIN | IOSQE_CQE_SKIP_SUCCESS | IOSQE_BUFFER_SELECT;

// Whether the request posts more than one CQE (multishot, zero-copy sends), posts one
// to another ring (whose loop would read our user_data as its own), or belongs in a link.
bool untrackable(const io_uring_sqe& sqe) noexcept {
  switch (sqe.opcode) {
    case IORING_OP_ACCEPT:
      return (sqe.ioprio & IORING_ACCEPT_MULTISHOT) != 0;
    case IORING_OP_RECV:
    case IORING_OP_RECVMSG:
      return (sqe.ioprio & IORING_RECV_MULTISHOT) != 0;
    case IORING_OP_POLL_ADD:
      return (sqe.len & IORING_POLL_ADD_MULTI) != 0;
    case IORING_OP_TIMEOUT:
      return (sqe.timeout_flags & timeout_multishot) != 0;
    case IORING_OP_SEND_ZC:
    case IORING_OP_SENDMSG_ZC:
    case IORING_OP_MSG_RING:
    case IORING_OP_LINK_TIMEOUT:
    case op_read_multishot:
      return true;
    default:
      return false;
  }
}

}  // namespace

int any_opcode_refusal(const io_uring_sqe& sqe) noexcept {
  if (sqe.user_data != 0 || (sqe.flags & refused_flags) != 0 || untrackable(sqe)) return -EINVAL;
  const io_context* ctx = io_context::current();
  if (ctx == nullptr || ctx->backend() != backend_kind::uring) return -EOPNOTSUPP;
  if (!kernel_supports_opcode(sqe.opcode)) return -ENOSYS;
  return 0;
}

}  // namespace ringio::detail
