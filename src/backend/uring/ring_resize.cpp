// SPDX-License-Identifier: Apache-2.0
#include "backend/uring/ring_resize.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "backend/uring/uring_compat.hpp"

namespace ringio::detail {
namespace {

std::size_t sqe_bytes(const io_uring& ring) noexcept {
  return (ring.flags & IORING_SETUP_SQE128) != 0 ? 2 * sizeof(io_uring_sqe) : sizeof(io_uring_sqe);
}

std::size_t page_rounded(std::size_t n) noexcept {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

std::size_t cqe_bytes(const io_uring& ring) noexcept {
  return (ring.flags & IORING_SETUP_CQE32) != 0 ? 2 * sizeof(io_uring_cqe) : sizeof(io_uring_cqe);
}

// Where the kernel puts the SQ index array in the rings' memory: after the CQEs, at the
// next cache line (64 bytes on the machines ringio runs on). The kernel reports it at
// setup but not after a resize (Linux 6.18 leaves sq_off.array 0: liburing's own resize
// only supports rings without the array); resize_ring() checks first that this
// reproduces the layout of the ring it has.
std::size_t sq_array_offset(std::size_t cqes_offset, unsigned cq_entries, std::size_t cqe_size) noexcept {
  constexpr std::size_t line = 64;
  return (cqes_offset + cq_entries * cqe_size + line - 1) / line * line;
}

void unmap_rings(const io_uring& ring) noexcept {
  ::munmap(ring.sq.sqes, sqe_bytes(ring) * ring.sq.ring_entries);
  ::munmap(ring.sq.ring_ptr, ring.sq.ring_sz);
  if (ring.cq.ring_ptr != nullptr && ring.cq.ring_ptr != ring.sq.ring_ptr) ::munmap(ring.cq.ring_ptr, ring.cq.ring_sz);
}

bool queue_nop(io_uring& ring, std::uint64_t tag) noexcept {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr) return false;
  io_uring_prep_nop(sqe);
  io_uring_sqe_set_data64(sqe, tag);
  return true;
}

// NOPs tagged first..first+n-1 complete in order through the ring's current mappings.
bool nops_complete(io_uring& ring, unsigned first, unsigned n) noexcept {
  if (io_uring_submit_and_wait(&ring, n) != static_cast<int>(n)) return false;
  for (unsigned i = 0; i < n; ++i) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_peek_cqe(&ring, &cqe) != 0 || cqe->user_data != first + i) return false;
    io_uring_cqe_seen(&ring, cqe);
  }
  return true;
}

// A ring of its own, grown from 2/4 to 8/16 entries with one NOP queued and not
// submitted and one completion not reaped: the kernel must accept the resize, both
// must come through the new mappings, and then eight NOPs in a row (every SQ slot,
// through the index array written after the resize) must complete with their tags.
bool probe() noexcept {
  io_uring ring;
  io_uring_params p{};
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
  p.cq_entries = 4;
  if (io_uring_queue_init_params(2, &ring, &p) < 0) return false;
  bool ok = queue_nop(ring, 1) && io_uring_submit_and_wait(&ring, 1) == 1 && queue_nop(ring, 2);
  bool remap_failed = false;
  ok = ok && resize_ring(ring, 8, 16, p.features, &remap_failed) == 0;
  if (remap_failed) {  // the old mappings are still there: exit unmaps them
    io_uring_queue_exit(&ring);
    return false;
  }
  ok = ok && ring.sq.ring_entries == 8 && ring.cq.ring_entries == 16;
  io_uring_cqe* cqe = nullptr;
  ok = ok && io_uring_peek_cqe(&ring, &cqe) == 0 && cqe->user_data == 1;
  if (ok) io_uring_cqe_seen(&ring, cqe);
  ok = ok && nops_complete(ring, 2, 1);
  for (unsigned i = 0; ok && i < 8; ++i) ok = queue_nop(ring, 3 + i);
  ok = ok && nops_complete(ring, 3, 8);
  io_uring_queue_exit(&ring);
  return ok;
}

}  // namespace

bool kernel_resizes_rings() noexcept {
  static const bool resizes = probe();
  return resizes;
}

int resize_ring(io_uring& ring, unsigned sq_entries, unsigned cq_entries, unsigned features,
                bool* remap_failed) noexcept {
  *remap_failed = false;
  const std::size_t cqes_offset = reinterpret_cast<char*>(ring.cq.cqes) - static_cast<char*>(ring.cq.ring_ptr);
  if ((ring.flags & IORING_SETUP_NO_SQARRAY) != 0 || ring.cq.ring_ptr != ring.sq.ring_ptr ||
      reinterpret_cast<char*>(ring.sq.array) - static_cast<char*>(ring.sq.ring_ptr) !=
          static_cast<std::ptrdiff_t>(sq_array_offset(cqes_offset, ring.cq.ring_entries, cqe_bytes(ring))))
    return -EOPNOTSUPP;  // a layout this code does not know how to map after a resize
  // The kernel copies the SQEs between the SQ's head and tail; liburing publishes the
  // tail only when it submits. The kernel reads the SQ only when entered, so publishing
  // early changes nothing else.
  __atomic_store_n(ring.sq.ktail, ring.sq.sqe_tail, __ATOMIC_RELEASE);
  io_uring_params p{};
  p.sq_entries = sq_entries;
  p.cq_entries = cq_entries;
  p.flags = IORING_SETUP_CQSIZE;
  if (::syscall(__NR_io_uring_register, ring.ring_fd, register_resize_rings, &p, 1) < 0) return -errno;
  // The kernel wrote back the sizes and ring offsets; the mapping sizes also depend on
  // the setup flags (SQE128, CQE32) and on whether both rings share one mapping.
  p.flags = ring.flags;
  p.features = features;
  if (p.sq_off.array == 0)
    p.sq_off.array = static_cast<__u32>(sq_array_offset(p.cq_off.cqes, p.cq_entries, cqe_bytes(ring)));
  io_uring fresh;
  if (int r = io_uring_queue_mmap(ring.ring_fd, &p, &fresh); r < 0) {
    *remap_failed = true;
    return r;
  }
  unmap_rings(ring);
  fresh.sq.sqe_head = ring.sq.sqe_head;
  fresh.sq.sqe_tail = ring.sq.sqe_tail;
  ring.sq = fresh.sq;
  ring.cq = fresh.cq;
  // The kernel took the SQEs across by position; slot i names SQE i, as liburing sets up.
  for (unsigned i = 0; i < ring.sq.ring_entries; ++i) ring.sq.array[i] = i;
  return 0;
}

std::size_t ring_mapped_bytes(const io_uring& ring) noexcept {
  std::size_t n = page_rounded(ring.sq.ring_sz) + page_rounded(sqe_bytes(ring) * ring.sq.ring_entries);
  if (ring.cq.ring_ptr != ring.sq.ring_ptr) n += page_rounded(ring.cq.ring_sz);
  return n;
}

}  // namespace ringio::detail
