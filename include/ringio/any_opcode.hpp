// SPDX-License-Identifier: Apache-2.0
// ringio/any_opcode.hpp — the escape hatch for io_uring opcodes ringio has no wrapper
// for: an operation built from an io_uring_prep_* call, with ringio's cancellation,
// deadlines and result<T>. io_uring completion backend only (docs/any_opcode.md).
#pragma once

#include <liburing.h>

#include <concepts>
#include <type_traits>
#include <utility>

#include "ringio/detail/any_opcode_op.hpp"

namespace ringio {

/// A callable that fills an SQE: `void(io_uring_sqe*)` (an io_uring_prep_* call) or
/// `void(io_uring_sqe&)`.
template <class Prep>
concept sqe_preparer = std::invocable<Prep&, io_uring_sqe*> || std::invocable<Prep&, io_uring_sqe&>;

/// A callable that turns a successful CQE into a value: `T(int res, unsigned cqe_flags)`
/// or `T(int res)`, where T may be void or a `result<U>` (to fail with an error of its own).
template <class Transform>
concept cqe_transform = std::invocable<Transform&, int, unsigned> || std::invocable<Transform&, int>;

/// One io_uring request that ringio has no wrapper for: `prep` fills a zeroed SQE now
/// (call io_uring_prep_*; set sqe->flags, ioprio, ... as the opcode needs; never
/// user_data), and awaiting the operation submits it. The result is the CQE's res,
/// >= 0, as `result<int>`; a negative res is its error (errno_code), operation_canceled
/// when a stop cancelled it, timed_out under with_timeout.
///
/// Cancellation follows ringio's rules: a stop before the start sends nothing
/// (operation_canceled); a stop in flight sends IORING_OP_ASYNC_CANCEL and the operation
/// completes only after the request's own CQE (a request the cancel missed gives its
/// real result). Every buffer and descriptor the SQE points to must stay alive until
/// the operation completes; a co_await guarantees it for the awaiting frame's locals.
///
/// Refused at the start, without submitting anything: on the epoll, uring-poll and sim
/// backends, operation_not_supported; an opcode the kernel's probe lacks,
/// function_not_supported; an SQE ringio cannot track, invalid_argument (user_data set;
/// IOSQE_IO_LINK, IOSQE_IO_HARDLINK, IOSQE_IO_DRAIN, IOSQE_CQE_SKIP_SUCCESS or
/// IOSQE_BUFFER_SELECT; multishot accept, recv, poll, timeout or READ_MULTISHOT;
/// SEND_ZC and SENDMSG_ZC; MSG_RING; LINK_TIMEOUT).
template <class Prep>
  requires sqe_preparer<Prep>
[[nodiscard]] detail::any_opcode_op<> any_opcode(Prep&& prep) {
  return {prep, detail::cqe_res{}};
}

/// The same, with `transform(res, cqe_flags)` or `transform(res)` making the value of a
/// successful CQE: the result is `result<T>` for a T (or a `result<T>`) it returns. It runs
/// on the loop's thread when the operation completes.
template <class Prep, class Transform>
  requires sqe_preparer<Prep> && cqe_transform<std::decay_t<Transform>>
[[nodiscard]] detail::any_opcode_op<std::decay_t<Transform>> any_opcode(Prep&& prep, Transform&& transform) {
  return {prep, std::forward<Transform>(transform)};
}

}  // namespace ringio
