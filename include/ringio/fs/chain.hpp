// SPDX-License-Identifier: Apache-2.0
// ringio/fs/chain.hpp — ordered operations: chain(f.write_at(buf, 0), f.sync_data())
// runs each link after the previous one succeeded. On io_uring the links go to the
// kernel as one IOSQE_IO_LINK chain in a single submission; on the readiness backends
// (and where io_uring cannot link them) they run one after the other.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include "ringio/detail/combinator_base.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/error.hpp"
#include "ringio/io_context.hpp"
#include "ringio/task.hpp"
#include "ringio/when_all.hpp"

namespace ringio {
namespace detail {

/// Whether a finished link breaks the chain: an error, or a short transfer (fewer bytes
/// than its buffer holds), which io_uring counts as a failed link too.
template <class Op>
bool link_failed(const Op& op) noexcept {
  if (op.res < 0) return true;
  if constexpr (requires { op.buf.size(); }) {
    return static_cast<std::size_t>(op.res) < op.buf.size();
  } else if constexpr (requires { op.vecs.size(); }) {  // vectored: short of the iovecs' total
    std::size_t total = 0;
    for (const auto& v : op.vecs) total += v.iov_len;
    return static_cast<std::size_t>(op.res) < total;
  } else {
    return false;
  }
}

/// The result a link gets when an earlier one failed: operation_canceled.
template <class R>
R canceled_link() {
  return R(unexpected(errno_code(-ECANCELED)));
}

template <std::size_t I, class Ops, class Results>
task<void> run_links_in_order(Ops& ops, Results& out) {
  if constexpr (I < std::tuple_size_v<Ops>) {
    auto& op = std::get<I>(ops);
    std::get<I>(out) = co_await op;
    if (link_failed(op)) co_return;  // the later links keep operation_canceled
    co_await run_links_in_order<I + 1>(ops, out);
  }
}

}  // namespace detail

/// Runs `ops` in order, each only after the previous one completed successfully, and
/// returns every link's result, in order. The links are operations (write_at, sync,
/// fs::rename, ...), given by value before they start.
///
/// What each link reports:
/// - a link that ran: its own result;
/// - a link after one that failed (an error, or a read or write that moved fewer bytes
///   than its buffer holds): operation_canceled, and it did nothing;
/// - a stop of the awaiting task (or of an explicit token of a link) before the chain
///   starts: operation_canceled for every link, nothing done; during the chain: the
///   link in progress is cancelled (operation_canceled, or its real result if it
///   finished first) and the links after it report operation_canceled.
///
/// On io_uring the links are submitted together with IOSQE_IO_LINK: one submission,
/// no round trip to the loop between them. That needs every link's opcode in the
/// kernel's probe, room in the submission queue and under the in-flight cap; otherwise
/// (and on epoll, uring-poll and sim) the links run one after the other with the same
/// results. Deadlines of individual links (with_timeout(op)) are dropped: bound the
/// whole chain with with_timeout(task) instead.
template <class... Ops>
  requires(sizeof...(Ops) > 0 && sizeof...(Ops) < 256)
[[nodiscard]] task<std::tuple<detail::await_result_t<Ops>...>> chain(Ops... ops) {
  constexpr std::size_t n = sizeof...(Ops);
  detail::op_base* links[n] = {static_cast<detail::op_base*>(&ops)...};
  for (detail::op_base* op : links) op->deadline_ns = 0;
  io_context* ctx = io_context::current();
  if (ctx != nullptr && ctx->can_link(links, n)) {
    for (std::size_t i = 0; i + 1 < n; ++i) {
      links[i]->link_next = true;
      links[i + 1]->chain_pos = static_cast<std::uint8_t>(i + 1);
    }
    co_return co_await when_all(std::move(ops)...);
  }
  std::tuple<detail::await_result_t<Ops>...> out(detail::canceled_link<detail::await_result_t<Ops>>()...);
  std::tuple<Ops&...> refs(ops...);
  co_await detail::run_links_in_order<0>(refs, out);
  co_return out;
}

}  // namespace ringio
