// SPDX-License-Identifier: Apache-2.0
// ringio/exec/io_sender.hpp — any ringio operation (recv, send, accept, sleep, ...) as a
// sender. The operation state is the operation itself, stored where the caller
// connects it: no allocation. Completion calls the receiver instead of resuming a
// coroutine, through a copy of the operation's op_vtable whose complete() is ours.
#pragma once

#include <cerrno>
#include <concepts>
#include <coroutine>
#include <optional>
#include <system_error>
#include <type_traits>
#include <utility>

#include "ringio/detail/io_operation.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/detail/stream_ops.hpp"
#include "ringio/exec/tags.hpp"
#include "ringio/io_context.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

template <class Op>
using op_result_t = decltype(std::declval<Op&>().get_result());

template <class R>
struct result_value;
template <class T>
struct result_value<ringio::result<T>> {
  using type = T;
};

template <class Op>
using op_value_t = typename result_value<op_result_t<Op>>::type;

template <class Op, class Receiver>
class io_state : private Op {
 public:
  using operation_state_concept = operation_state_t;

  io_state(Op op, Receiver r) noexcept(std::is_nothrow_move_constructible_v<Receiver>)
      : Op(std::move(op)), rcvr_(std::move(r)) {
    vtable_ = *this->vt;
    vtable_.complete = &on_complete;
    this->vt = &vtable_;
  }
  io_state(const io_state&) = delete;
  io_state& operator=(const io_state&) = delete;

  void start() & noexcept {
    io_context* loop = io_context::current();
    if (loop == nullptr) {  // not on a loop thread: nothing can be submitted
      std::move(rcvr_).set_error(std::make_error_code(std::errc::operation_not_permitted));
      return;
    }
    // A close obeys no stop token (the descriptor was already taken from its owner).
    constexpr bool stoppable = !std::is_same_v<Op, ringio::detail::close_op>;
    auto token = exec::get_stop_token(exec::get_env(rcvr_));
    if (stoppable && token.stop_requested()) {  // stopped before it started: no SQE is sent
      std::move(rcvr_).set_stopped();
      return;
    }
    const std::stop_token& own = this->explicit_stop_token();
    if (stoppable && own.stop_requested()) {  // the same for a token given with .with_stop()
      std::move(rcvr_).set_stopped();
      return;
    }
    if constexpr (requires(Op& o) { o.before_start(); }) {
      if (int r = Op::before_start(); r < 0) {
        this->res = r;
        deliver();
        return;
      }
    }
    bool pending = ringio::detail::start_operation(*this, std::noop_coroutine(), own.stop_possible() ? &own : nullptr);
    if (!pending) {
      deliver();
      return;
    }
    // After the start, so that a stop arriving now finds the operation in flight; the
    // cancellation is delivered later, never from here.
    if (stoppable && token.stop_possible()) stop_cb_.emplace(token, ringio::detail::stop_canceller{this});
  }

 private:
  using token_type = stop_token_of_t<decltype(exec::get_env(std::declval<const Receiver&>()))>;
  using callback_type = stop_callback_for_t<token_type, ringio::detail::stop_canceller>;

  static void on_complete(ringio::detail::op_base& b) noexcept {
    auto& self = static_cast<io_state&>(static_cast<Op&>(b));
    // Destroying the callback waits for one running on another thread; then
    // remote_cancel says whether its request still travels to the loop.
    self.stop_cb_.reset();
    if (self.remote_cancel.load(std::memory_order_acquire) && !self.remote_cancel_seen) {
      // RACE: the loop completes the operation again once it drained the request.
      self.state = ringio::detail::op_state::done_deferred;
      return;
    }
    self.deliver();
  }

  void deliver() noexcept {
    auto r = Op::get_result();
    if (r) {
      if constexpr (std::is_void_v<op_value_t<Op>>) std::move(rcvr_).set_value();
      else std::move(rcvr_).set_value(std::move(*r));
    } else if (r.error() == std::errc::operation_canceled) {
      std::move(rcvr_).set_stopped();
    } else {
      std::move(rcvr_).set_error(r.error());
    }
  }

  Receiver rcvr_;
  ringio::detail::op_vtable vtable_{};
  std::optional<callback_type> stop_cb_;
};

}  // namespace detail
/// @endcond

/// A ringio operation as a sender. Completes with set_value(T) (T: what awaiting the
/// operation gives on success: a byte count, a socket, nothing), set_error(ec) for an
/// error (timed_out after with_timeout), or set_stopped() when it was cancelled: by the
/// stop token of the receiver's environment (ASYNC_CANCEL, as a task's token does), by
/// a token given with .with_stop(), or by the socket's cancel(). A stop before start()
/// sends nothing and completes with set_stopped(); a stop that loses the race delivers
/// the real result; completion comes only after the operation's final CQE. start()
/// must run on the thread of a running io_context (inside sync_wait, a task, or after
/// a scheduler's schedule()); elsewhere it completes with operation_not_permitted.
/// The operation state may complete inline from start() (an operation that finished
/// at once).
template <class Op>
class io_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// How it completes.
  using completion_signatures = std::conditional_t<
      std::is_void_v<detail::op_value_t<Op>>,
      exec::completion_signatures<set_value_t(), set_error_t(std::error_code), set_stopped_t()>,
      exec::completion_signatures<
          set_value_t(std::conditional_t<std::is_void_v<detail::op_value_t<Op>>, int, detail::op_value_t<Op>>),
          set_error_t(std::error_code), set_stopped_t()>>;

  /// Wraps `op` (not started).
  explicit io_sender(Op op) noexcept : op_(std::move(op)) {}

  /// The operation state running the operation and completing `r`.
  template <class Receiver>
  detail::io_state<Op, std::decay_t<Receiver>> connect(Receiver&& r) && {
    return {std::move(op_), std::forward<Receiver>(r)};
  }
  /// The same, with a copy of the operation (the sender stays usable).
  template <class Receiver>
  detail::io_state<Op, std::decay_t<Receiver>> connect(Receiver&& r) const& {
    return {op_, std::forward<Receiver>(r)};
  }

 private:
  Op op_;
};

/// Any ringio operation (what sock.recv(), listener.accept(), sleep_for(), with_timeout()
/// ... return) as a sender; see io_sender.
template <class Op>
  requires std::derived_from<Op, ringio::detail::op_base>
[[nodiscard]] io_sender<Op> as_sender(Op op) noexcept {
  return io_sender<Op>(std::move(op));
}

}  // namespace ringio::exec
