// SPDX-License-Identifier: Apache-2.0
// A batching_writer's send ring and the send bundle that reads it.
#include "ringio/detail/send_bundle_ring.hpp"

#include <liburing.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "backend/uring/uring_compat.hpp"
#include "core/backend.hpp"
#include "ringio/detail/bundle_send_op.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio::detail {
namespace {

// The kernel sends at most INT_MAX bytes of a bundle and shortens the entry that
// crosses it (and then may go on with a second send): a pass holds less.
constexpr std::size_t max_ring_bytes = std::size_t{1} << 30;

std::size_t page_size() noexcept {
  const long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<std::size_t>(p) : 4096;
}

void bundle_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<bundle_send_op&>(b);
  io_uring_prep_send(&sqe, op.fd, nullptr, 0, MSG_NOSIGNAL);
  sqe.flags |= IOSQE_BUFFER_SELECT;
  sqe.buf_group = static_cast<__u16>(op.group);
  sqe.ioprio |= IORING_RECVSEND_BUNDLE;
}
// Only io_uring selects from the ring; the writer never starts a bundle elsewhere.
int bundle_attempt(op_base&) noexcept { return -EOPNOTSUPP; }
// One completion per request (the ring is empty once the kernel took its entries); a
// kernel that went on with a second send after a first (F_MORE) adds its bytes.
void bundle_on_cqe(op_base& b, int res, unsigned) noexcept {
  auto& op = static_cast<bundle_send_op&>(b);
  if (res > 0) op.sent += static_cast<std::size_t>(res);
}

}  // namespace

const op_vtable bundle_send_vtable = {.prepare = bundle_prepare,
                                      .attempt = bundle_attempt,
                                      .on_cqe = bundle_on_cqe,
                                      .step = nullptr,
                                      .complete = resume_waiter};

void send_bundle_ring::open(io_context* ctx) noexcept {
  if (ctx == nullptr || active() || (ctx->buffer_ring_features() & feature_send_bundle) == 0) return;
  const std::size_t page = page_size();
  static_assert(capacity * sizeof(io_uring_buf) <= 4096);
  void* mem = std::aligned_alloc(page, page);  // the kernel wants the ring page-aligned
  if (mem == nullptr) return;
  std::memset(mem, 0, page);
  const int group = ctx->register_buffer_ring(mem, capacity, false);
  if (group < 0) {
    std::free(mem);
    return;
  }
  ctx_ = ctx;
  ring_ = mem;
  group_ = group;
  head_ = 0;
  loaded_ = 0;
}

void send_bundle_ring::close() noexcept {
  if (!active()) return;
  ctx_->unregister_buffer_ring(group_);
  std::free(ring_);
  ring_ = nullptr;
  group_ = -1;
  ctx_ = nullptr;
}

std::size_t send_bundle_ring::load(std::span<const const_buffer> bufs) noexcept {
  auto* br = static_cast<io_uring_buf_ring*>(ring_);
  unsigned n = 0;
  std::size_t total = 0;
  for (const const_buffer& b : bufs) {
    if (n == capacity || total == max_ring_bytes) break;
    if (b.size() == 0) continue;  // nothing to send (the kernel refuses an empty first entry)
    const std::size_t len = std::min(b.size(), max_ring_bytes - total);
    io_uring_buf& e = br->bufs[(head_ + n) & (capacity - 1)];
    e.addr = reinterpret_cast<std::uint64_t>(b.data());
    e.len = static_cast<std::uint32_t>(len);
    e.bid = static_cast<std::uint16_t>(n);
    lengths_[n++] = static_cast<std::uint32_t>(len);
    total += len;
  }
  loaded_ = n;
  loaded_bytes_ = total;
  // Publishes the entries; the tail may move back (a short send left fewer to send),
  // which the kernel allows while no request reads the ring.
  io_uring_smp_store_release(&br->tail, static_cast<std::uint16_t>(head_ + n));
  return total;
}

bool send_bundle_ring::consumed(std::size_t bytes) noexcept {
  const bool whole = bytes == loaded_bytes_;
  unsigned n = 0;
  while (bytes > 0 && n < loaded_) {
    bytes -= std::min<std::size_t>(bytes, lengths_[n]);
    ++n;
  }
  head_ = static_cast<std::uint16_t>(head_ + n);
  loaded_ = 0;
  loaded_bytes_ = 0;
  return whole;
}

void send_bundle_ring::renew() noexcept {
  io_context* ctx = ctx_;
  close();
  open(ctx);
}

bool send_bundle_ring::cancelled(const stream_socket& s) const noexcept {
  return ctx_ != nullptr && ctx_->cancel_mark(s.operation_fd(), s.is_direct()) != cancel_mark_;
}

bundle_send_op send_bundle_ring::send(const stream_socket& s) noexcept {
  cancel_mark_ = ctx_->cancel_mark(s.operation_fd(), s.is_direct());
  return s.on_socket(bundle_send_op{s.operation_fd(), static_cast<unsigned>(group_), loaded_bytes_});
}

}  // namespace ringio::detail
