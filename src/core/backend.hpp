// SPDX-License-Identifier: Apache-2.0
// backend — what a loop needs from the thing that waits for I/O. Three implementations:
// uring_backend (completion and uring-poll modes) and epoll_backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct iovec;

#include "ringio/detail/op_base.hpp"

namespace ringio::detail {

/// Optional receive features of provided-buffer rings (backend::buffer_ring_features).
enum buffer_ring_feature : unsigned {
  feature_recv_bundle = 1,  ///< IORING_RECVSEND_BUNDLE on receives
  feature_incremental = 2,  ///< rings registered with IOU_PBUF_RING_INC
  feature_send_bundle = 4,  ///< IORING_RECVSEND_BUNDLE sends (io_context_options::send_bundles on)
};

class backend {
 public:
  virtual ~backend() = default;

  /// Begins `op` (op.ctx is set). Returns true when it finished synchronously, with
  /// op.res set and op.state == done; then its complete() is not called.
  virtual bool start(op_base& op) = 0;
  /// Asks for `op` to be cancelled (loop thread). It completes later, normally.
  virtual void cancel(op_base& op) noexcept = 0;
  /// Whether start() would run `op`'s attempt() on the loop's thread, where it may block
  /// (a file operation, op.vt->offload set): the loop sends it to its blocking pool
  /// instead. False: the backend handles it (a native opcode; sim runs it inline).
  [[nodiscard]] virtual bool runs_inline(const op_base& op) const noexcept {
    (void)op;
    return false;
  }
  /// One loop iteration: submit what is queued, wait for an event when `block` (but
  /// not past `wake_at_ns` on CLOCK_MONOTONIC, when not 0), dispatch every completion
  /// that is ready.
  virtual void poll(bool block, std::int64_t wake_at_ns) = 0;
  /// Submits what is queued without waiting (a loop about to return must not keep a
  /// wake-up message for another loop in its queue).
  virtual void flush() noexcept {}
  /// Interrupts a blocking poll(); safe from any thread.
  virtual void wake() noexcept = 0;
  /// Cancels everything in flight (shutdown).
  virtual void cancel_all() noexcept = 0;
  /// Cancels every operation of this loop waiting on `fd` (stream_socket::cancel()), or
  /// on slot `fd` of the file table when `direct`. Each completes later, normally, with
  /// -ECANCELED unless it already had a result.
  virtual void cancel_fd(int fd, bool direct) noexcept = 0;
  /// Operations in flight, not counting the backend's own.
  [[nodiscard]] virtual std::size_t in_flight() const noexcept = 0;
  /// One line: backend name, flags, sizes.
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Wakes the loop that owns the io_uring `ring_fd` by a message from this loop's ring
  /// (IORING_OP_MSG_RING: no syscall of its own, sent with this loop's next submit).
  /// False when this backend cannot (then the target's wake() is used).
  virtual bool send_wake(int ring_fd) noexcept {
    (void)ring_fd;
    return false;
  }
  /// Registers a provided-buffer ring of `entries` at `ring_addr` (page aligned), with
  /// IOU_PBUF_RING_INC when `incremental`; returns its buffer group id, or -errno
  /// (-EOPNOTSUPP without io_uring).
  virtual int register_buffer_ring(void* ring_addr, unsigned entries, bool incremental) noexcept {
    (void)ring_addr;
    (void)entries;
    (void)incremental;
    return -95;  // EOPNOTSUPP
  }
  /// Whether the `n` operations can go to the kernel as one IOSQE_IO_LINK chain, started
  /// back to back now: room in the SQ and under the in-flight cap, every opcode native.
  /// May submit what is queued to make room. Readiness backends: false.
  virtual bool can_link(op_base* const* ops, std::size_t n) noexcept {
    (void)ops;
    (void)n;
    return false;
  }
  /// Fixed buffers for READ_FIXED/WRITE_FIXED: 0 or -errno. Backends that do the I/O
  /// themselves have nothing to register.
  virtual int register_buffers(const iovec* buffers, unsigned count) noexcept {
    (void)buffers;
    (void)count;
    return 0;
  }
  virtual void unregister_buffers() noexcept {}
  /// buffer_ring_feature bits the kernel offers (io_uring completion mode only).
  [[nodiscard]] virtual unsigned buffer_ring_features() const noexcept { return 0; }
  virtual void unregister_buffer_ring(int group) noexcept { (void)group; }
  // ---- direct descriptors (a sparse file table of the ring); io_uring only ----
  /// Slots of the file table; 0 when the backend has none (the mode is off).
  [[nodiscard]] virtual unsigned direct_table_size() const noexcept { return 0; }
  /// Slots neither taken nor reserved.
  [[nodiscard]] virtual unsigned direct_free() const noexcept { return 0; }
  /// Counts one slot as taken (an accept about to fill one, or that filled one).
  virtual void direct_reserve() noexcept {}
  /// Gives back a slot counted by direct_reserve() that no accept filled.
  virtual void direct_unreserve() noexcept {}
  /// Closes slot `index` (through the ring, no completion to wait for) and counts it free.
  virtual void close_direct(int index) noexcept { (void)index; }
  /// Installs slot `index` as a normal descriptor (O_CLOEXEC), synchronously: returns it
  /// or -errno. The slot stays taken.
  virtual int install_direct(int index) noexcept {
    (void)index;
    return -9;  // EBADF
  }
  /// The io_uring fd, or -1 (for IORING_SETUP_ATTACH_WQ and MSG_RING).
  [[nodiscard]] virtual int ring_fd() const noexcept { return -1; }
};

}  // namespace ringio::detail
