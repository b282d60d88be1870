// SPDX-License-Identifier: Apache-2.0
// ringio/detail/send_bundle_ring.hpp — a provided-buffer ring whose entries point at the
// bytes a batching_writer is sending, for one send bundle per pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "ringio/buffer.hpp"
#include "ringio/detail/bundle_send_op.hpp"
#include "ringio/detail/gather_send_op.hpp"

namespace ringio {
class io_context;
class stream_socket;
}  // namespace ringio

namespace ringio::detail {

/// One writer's send ring (io_context_options::send_bundles). Nothing is in flight
/// between two sends, so each pass rewrites the entries from the kernel's head: the
/// ring holds exactly the pass's buffers, and the kernel, which stops a bundle once it
/// has taken every entry up to the tail, sends them in one request and one completion.
/// The kernel retries a short send itself until every entry is out, so a completion
/// with fewer bytes means the send was cut short (a stop, an error): the writer then
/// takes a fresh ring for the next pass.
class send_bundle_ring {
 public:
  /// Entries: as many as one pass sends (a power of two, as the kernel wants).
  static constexpr unsigned capacity = max_gather_buffers;

  send_bundle_ring() noexcept = default;
  send_bundle_ring(const send_bundle_ring&) = delete;
  send_bundle_ring& operator=(const send_bundle_ring&) = delete;
  ~send_bundle_ring() { close(); }

  /// Registers the ring with `ctx` when it offers send bundles (io_uring completion
  /// backend, option on, Linux 6.10); otherwise, or when the registration fails, the
  /// ring stays off and the writer sends with sendmsg.
  void open(io_context* ctx) noexcept;
  /// Removes the ring from the kernel (no send may be in flight) and frees its page.
  void close() noexcept;
  /// Whether sends go as bundles.
  [[nodiscard]] bool active() const noexcept { return group_ >= 0; }

  /// Makes the ring hold `bufs` (their non-empty ones, at most `capacity`, at most
  /// 1 GiB together) from its head; returns the bytes it holds (0: nothing to send).
  std::size_t load(std::span<const const_buffer> bufs) noexcept;
  /// A send took `bytes` of what load() put in: moves the head past the entries that
  /// cover them. Returns whether it took everything (the usual case: the kernel goes on
  /// sending until every entry is out, unless it is stopped or fails).
  bool consumed(std::size_t bytes) noexcept;
  /// After a send that ended early: registers a fresh ring (head 0), so that the next
  /// pass does not depend on how the kernel counted an entry sent in part.
  void renew() noexcept;
  /// After a send that ended early: whether `s` saw a cancel() (stream_socket::cancel)
  /// since the send began, rather than the send failing or coming back short.
  [[nodiscard]] bool cancelled(const stream_socket& s) const noexcept;
  /// The send of what the ring holds, on `s`.
  [[nodiscard]] bundle_send_op send(const stream_socket& s) noexcept;

 private:
  io_context* ctx_ = nullptr;
  void* ring_ = nullptr;  // io_uring_buf_ring: one page
  int group_ = -1;
  std::uint16_t head_ = 0;                // the kernel's head, as its completions moved it
  unsigned loaded_ = 0;                   // entries from head_ that load() filled
  std::size_t loaded_bytes_ = 0;          // their bytes
  std::uint32_t cancel_mark_ = 0;         // the socket's cancel count when the send began
  std::uint32_t lengths_[capacity] = {};  // their lengths, from head_ on
};

}  // namespace ringio::detail
