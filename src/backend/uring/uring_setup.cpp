// SPDX-License-Identifier: Apache-2.0
#include "backend/uring/uring_setup.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backend/uring/opcode_probe.hpp"
#include "backend/uring/ring_resize.hpp"
#include "backend/uring/uring_compat.hpp"
#include "core/backend_factory.hpp"

namespace ringio::detail {
namespace {

struct flag_name {
  unsigned flag;
  const char* name;
};

constexpr flag_name setup_flag_names[] = {
    {IORING_SETUP_SQPOLL, "SQPOLL"},
    {IORING_SETUP_CQSIZE, "CQSIZE"},
    {IORING_SETUP_ATTACH_WQ, "ATTACH_WQ"},
    {IORING_SETUP_R_DISABLED, "R_DISABLED"},
    {IORING_SETUP_SUBMIT_ALL, "SUBMIT_ALL"},
    {IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"},
    {IORING_SETUP_SINGLE_ISSUER, "SINGLE_ISSUER"},
    {IORING_SETUP_DEFER_TASKRUN, "DEFER_TASKRUN"},
};

struct opcode_name {
  int op;
  const char* name;
};

// Every opcode ringio submits.
constexpr opcode_name required_opcodes[] = {
    {IORING_OP_NOP, "IORING_OP_NOP"},
    {IORING_OP_READ, "IORING_OP_READ"},
    {IORING_OP_WRITE, "IORING_OP_WRITE"},
    {IORING_OP_SEND, "IORING_OP_SEND"},
    {IORING_OP_RECV, "IORING_OP_RECV"},
    {IORING_OP_SENDMSG, "IORING_OP_SENDMSG"},
    {IORING_OP_RECVMSG, "IORING_OP_RECVMSG"},
    {IORING_OP_ACCEPT, "IORING_OP_ACCEPT"},
    {IORING_OP_CONNECT, "IORING_OP_CONNECT"},
    {IORING_OP_CLOSE, "IORING_OP_CLOSE"},
    {IORING_OP_SHUTDOWN, "IORING_OP_SHUTDOWN"},
    {IORING_OP_TIMEOUT, "IORING_OP_TIMEOUT"},
    {IORING_OP_LINK_TIMEOUT, "IORING_OP_LINK_TIMEOUT"},
    {IORING_OP_ASYNC_CANCEL, "IORING_OP_ASYNC_CANCEL"},
    {IORING_OP_POLL_ADD, "IORING_OP_POLL_ADD"},
};

struct feature_name {
  unsigned feature;
  const char* name;
};

// NODROP: an overflowing CQ is buffered, not lost. FAST_POLL: socket operations wait
// by internal poll instead of a worker thread. SUBMIT_STABLE: SQE data may change
// after submission. EXT_ARG is what io_uring_submit_and_wait_timeout relies on.
constexpr feature_name required_features[] = {
    {IORING_FEAT_NODROP, "IORING_FEAT_NODROP"},
    {IORING_FEAT_FAST_POLL, "IORING_FEAT_FAST_POLL"},
    {IORING_FEAT_SUBMIT_STABLE, "IORING_FEAT_SUBMIT_STABLE"},
};

[[noreturn]] void fail(int err, const std::string& what) {
  throw backend_setup_error(std::error_code(err, std::system_category()), what);
}

// Checks every required opcode and feature; notes the optional ones in `s`.
void probe(io_uring& ring, unsigned features, ring_setup& s) {
  for (const feature_name& f : required_features)
    if ((features & f.feature) == 0) fail(EINVAL, std::string("kernel lacks ") + f.name);
  constexpr unsigned slots = 256;
  std::unique_ptr<io_uring_probe, void (*)(io_uring_probe*)> p(
      static_cast<io_uring_probe*>(std::calloc(1, sizeof(io_uring_probe) + slots * sizeof(io_uring_probe_op))),
      io_uring_free_probe);
  if (!p) fail(ENOMEM, "out of memory for the io_uring probe");
  if (int r = io_uring_register_probe(&ring, p.get(), slots); r < 0)
    fail(-r, std::string("io_uring_register(IORING_REGISTER_PROBE): ") + std::strerror(-r));
  for (const opcode_name& o : required_opcodes)
    if (!io_uring_opcode_supported(p.get(), o.op)) fail(EINVAL, std::string("kernel lacks ") + o.name);
  note_supported_opcodes(p.get());
  s.msg_ring = io_uring_opcode_supported(p.get(), IORING_OP_MSG_RING) != 0;
  s.fixed_fd_install = io_uring_opcode_supported(p.get(), op_fixed_fd_install) != 0;
  s.send_zc = io_uring_opcode_supported(p.get(), IORING_OP_SEND_ZC) != 0;
  s.min_wait = (features & IORING_FEAT_MIN_TIMEOUT) != 0;
  s.no_iowait = (features & IORING_FEAT_NO_IOWAIT) != 0;
}

// Whether the kernel registers a buffer ring with IOU_PBUF_RING_INC (older kernels
// refuse the flag with EINVAL): a one-entry ring under a group id nothing else uses.
bool probe_incremental_buffers(io_uring& ring) {
  const long page = ::sysconf(_SC_PAGESIZE);
  void* mem =
      ::mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uint64_t>(mem);
  reg.ring_entries = 1;
  reg.bgid = 0xffff;
  set_buf_reg_flags(reg, IOU_PBUF_RING_INC);
  const bool ok = io_uring_register_buf_ring(&ring, &reg, 0) == 0;
  if (ok) io_uring_unregister_buf_ring(&ring, 0xffff);
  ::munmap(mem, static_cast<std::size_t>(page));
  return ok;
}

// Whether io_uring_enter may be called at all (a seccomp filter may allow setup and
// register but deny enter, and then the first submission would fail). An enter that
// submits and waits for nothing: 0 on an enabled ring, EBADFD from the kernel on one
// still R_DISABLED; any other error is the caller's to report.
void probe_enter(io_uring& ring) {
  const long r = ::syscall(__NR_io_uring_enter, ring.ring_fd, 0U, 0U, 0U, nullptr, 0UL);
  if (r < 0 && errno != EBADFD) {
    const int err = errno;
    fail(err, std::string("io_uring_enter: ") + std::strerror(err));
  }
}

// The ring with sq/cq entries and the fastest flags the kernel accepts, probed.
ring_setup create_ring_sized(io_uring& ring, const io_context_options& opts, unsigned sq, unsigned cq) {
  unsigned base = IORING_SETUP_CQSIZE;
  if (opts.attach_wq_of != nullptr) base |= IORING_SETUP_ATTACH_WQ;
  // Optional flags, dropped from the back when the kernel refuses them with EINVAL.
  unsigned optional[4];
  int n_optional = 0;
  if (opts.sqpoll) {
    base |= IORING_SETUP_SQPOLL;
    optional[n_optional++] = IORING_SETUP_SUBMIT_ALL;
    optional[n_optional++] = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_R_DISABLED;
  } else {
    optional[n_optional++] = IORING_SETUP_SUBMIT_ALL;
    optional[n_optional++] = IORING_SETUP_COOP_TASKRUN;
    // R_DISABLED: the thread that enables the ring (the loop's) becomes its only issuer,
    // so a context may be built on one thread and run on another.
    optional[n_optional++] = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_R_DISABLED;
    if (opts.defer_taskrun) optional[n_optional++] = IORING_SETUP_DEFER_TASKRUN;
  }

  for (int keep = n_optional; keep >= 0; --keep) {
    io_uring_params p{};
    p.flags = base;
    for (int i = 0; i < keep; ++i) p.flags |= optional[i];
    p.cq_entries = cq;
    if (opts.attach_wq_of != nullptr) p.wq_fd = static_cast<unsigned>(opts.attach_wq_of->ring_fd());
    int r = io_uring_queue_init_params(sq, &ring, &p);
    if (r == -EINVAL && keep > 0) continue;
    if (r < 0) fail(-r, std::string("io_uring_setup: ") + std::strerror(-r));
    ring_setup s;
    s.flags = p.flags;
    s.features = p.features;
    s.sq_entries = p.sq_entries;
    s.cq_entries = p.cq_entries;
    s.disabled = (p.flags & IORING_SETUP_R_DISABLED) != 0;
    try {
      probe_enter(ring);
      probe(ring, p.features, s);
      s.recv_bundle = (p.features & IORING_FEAT_RECVSEND_BUNDLE) != 0;
      s.pbuf_inc = probe_incremental_buffers(ring);
    } catch (...) {
      io_uring_queue_exit(&ring);
      throw;
    }
    return s;
  }
  fail(EINVAL, "io_uring_setup: no flag combination accepted");
}

}  // namespace

std::string describe_setup_flags(unsigned flags) {
  std::string s;
  for (const flag_name& f : setup_flag_names) {
    if ((flags & f.flag) == 0) continue;
    if (!s.empty()) s += '|';
    s += f.name;
  }
  return s.empty() ? "none" : s;
}

namespace {

unsigned round_up_pow2(unsigned n) noexcept {
  unsigned p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Whether the ring may start small and grow to sq/cq, or why not.
const char* why_no_resize(const io_context_options& opts, unsigned sq, unsigned cq) noexcept {
  if (!opts.ring_resize) return "off";
  if (opts.sqpoll || !opts.defer_taskrun) return "needs defer_taskrun";
  // Sizes the kernel refuses at setup keep failing there, as without resizing.
  if (sq > 32768 || cq > 65536) return "not needed";
  if (round_up_pow2(sq) <= resize_start_sq && round_up_pow2(cq) <= resize_start_cq) return "not needed";
  if (!kernel_resizes_rings()) return "unsupported";
  return nullptr;
}

}  // namespace

ring_setup create_ring(io_uring& ring, const io_context_options& opts) {
  // At least 2: an operation with a deadline and its linked timeout go in together.
  unsigned sq = opts.sq_entries == 0 ? 4096 : std::max(opts.sq_entries, 2U);
  unsigned cq = opts.cq_entries == 0 ? 65536 : opts.cq_entries;
  if (cq < sq) cq = sq;
  const char* no_resize = why_no_resize(opts, sq, cq);
  for (;;) {
    const bool grows = no_resize == nullptr;
    ring_setup s = create_ring_sized(ring, opts, grows ? std::min(round_up_pow2(sq), resize_start_sq) : sq,
                                     grows ? std::min(round_up_pow2(cq), resize_start_cq) : cq);
    if (grows && (s.flags & IORING_SETUP_DEFER_TASKRUN) == 0) {
      // The kernel refused DEFER_TASKRUN (it never does where it resizes): full size.
      io_uring_queue_exit(&ring);
      no_resize = "needs defer_taskrun";
      continue;
    }
    if (grows) {
      s.max_sq_entries = round_up_pow2(sq);
      s.max_cq_entries = round_up_pow2(cq);
    }
    s.no_resize_reason = no_resize;
    return s;
  }
}

}  // namespace ringio::detail
