// SPDX-License-Identifier: Apache-2.0
// ringio/detail/any_opcode_op.hpp — an io_uring request ringio has no wrapper for. The
// caller's io_uring_prep_* call fills an SQE kept in the operation when it is made; at
// the start ringio checks it (any_opcode_refusal) and copies it into the ring, setting
// only user_data (and IOSQE_IO_LINK for a deadline). Its CQE's res is the result.
#pragma once

#include <liburing.h>

#include <cerrno>
#include <coroutine>
#include <cstring>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/io_context.hpp"
#include "ringio/result.hpp"

namespace ringio::detail {

/// Whether the prepared `sqe` may go to the ring of the current thread's loop: 0, or
/// -EINVAL for what ringio cannot track (user_data set; IOSQE_IO_LINK, IO_HARDLINK,
/// IO_DRAIN, CQE_SKIP_SUCCESS or BUFFER_SELECT; a multishot request or any opcode that
/// posts more than one completion; MSG_RING; a LINK_TIMEOUT of its own), -EOPNOTSUPP
/// when the loop is not the io_uring completion backend (or there is none), -ENOSYS
/// when the kernel's probe lacks the opcode.
int any_opcode_refusal(const io_uring_sqe& sqe) noexcept;

/// The transform of any_opcode without one: the CQE's res (>= 0) as an int.
struct cqe_res {
  /// Returns `res`.
  int operator()(int res) const noexcept { return res; }
};

template <class T>
struct as_any_opcode_result {
  using type = result<T>;
};
template <class U>
struct as_any_opcode_result<result<U>> {  // a transform that can fail itself
  using type = result<U>;
};

/// What `Transform` gives for a CQE (by value): it takes (res, cqe flags) or (res).
template <class Transform>
using any_opcode_value_t =
    std::remove_cvref_t<typename std::conditional_t<std::is_invocable_v<Transform&, int, unsigned>,
                                                    std::invoke_result<Transform&, int, unsigned>,
                                                    std::invoke_result<Transform&, int>>::type>;

/// The operation: an SQE image, the transform of its result. Not movable once started.
template <class Transform = cqe_res>
class any_opcode_op : public io_operation<any_opcode_op<Transform>> {
  using base = io_operation<any_opcode_op<Transform>>;

 public:
  /// The result awaiting it gives: `result<T>` for a transform returning T or `result<T>`.
  using result_type = typename as_any_opcode_result<any_opcode_value_t<Transform>>::type;

  /// Fills the SQE now: `prep(io_uring_sqe*)` (or `prep(io_uring_sqe&)`) on a zeroed one.
  template <class Prep>
  any_opcode_op(Prep& prep, Transform t) : base(&vtable), transform_(std::move(t)) {
    std::memset(&sqe_, 0, sizeof sqe_);
    if constexpr (std::is_invocable_v<Prep&, io_uring_sqe*>) prep(&sqe_);
    else prep(sqe_);
  }

  /// Starts it: refused requests complete at once (after a stop before the start, which
  /// wins as for every operation).
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    const std::stop_token* inherited = base::inherited_token(h);
    const bool stopped = (inherited != nullptr && inherited->stop_requested()) || this->token_.stop_requested();
    if (!stopped && io_context::current() != nullptr) {
      if (int r = before_start(); r < 0) {
        this->res = r;
        this->state = op_state::done;
        return false;
      }
    }
    return base::await_suspend(h);
  }

  /// The check io_sender makes before starting it (see any_opcode_refusal).
  int before_start() noexcept { return any_opcode_refusal(sqe_); }

  /// The CQE's res through the transform, or the error (op_error: operation_canceled,
  /// timed_out after a deadline, what the kernel reported).
  result_type get_result() {
    if (this->res < 0) return unexpected(op_error(*this));
    using value = any_opcode_value_t<Transform>;
    if constexpr (std::is_void_v<value>) {
      invoke_transform();
      return {};
    } else {
      return invoke_transform();
    }
  }

  /// The prepared SQE (as it goes to the ring, before user_data is set).
  [[nodiscard]] const io_uring_sqe& sqe() const noexcept { return sqe_; }

 private:
  decltype(auto) invoke_transform() {
    if constexpr (std::is_invocable_v<Transform&, int, unsigned>) return transform_(this->res, this->cqe_flags);
    else return transform_(this->res);
  }

  static void prepare(op_base& op, io_uring_sqe& sqe) noexcept {
    auto& self = static_cast<any_opcode_op&>(op);
    std::memcpy(&sqe, &self.sqe_, sizeof sqe);
    op.zero_copy_refused = true;  // the request goes out as the caller prepared it
  }
  // Never reached on readiness backends (refused before the start): a safe answer anyway.
  static int attempt(op_base&) noexcept { return -EOPNOTSUPP; }

  static constexpr op_vtable vtable{&prepare, &attempt, nullptr, nullptr, &resume_waiter};

  io_uring_sqe sqe_;
  [[no_unique_address]] Transform transform_;
};

}  // namespace ringio::detail
