// SPDX-License-Identifier: Apache-2.0
#include "doctor/uring_features.hpp"

#include <liburing.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "backend/uring/ring_resize.hpp"
#include "backend/uring/uring_compat.hpp"

namespace ringio::doctor::detail {
namespace {

using ringio::detail::ring_setup;

feature make(std::string name, bool yes, bool used, const std::string& yes_why, const std::string& no_why) {
  return feature{std::move(name), yes, used, yes ? yes_why : no_why};
}

feature setup_flag(const ring_setup& s, unsigned flag, const char* name, const char* since) {
  std::string f = std::string("IORING_SETUP_") + name;
  return make(name, (s.flags & flag) != 0, true, "the kernel accepted " + f + " for ringio's ring",
              "the kernel refused " + f + " (Linux " + since + ")");
}

// Descriptors closed last, after the ring that may still hold requests on them.
struct probe_fds {
  int listener = -1;
  int pair[2] = {-1, -1};
  probe_fds() = default;
  probe_fds(const probe_fds&) = delete;
  probe_fds& operator=(const probe_fds&) = delete;
  ~probe_fds() {
    for (int fd : {listener, pair[0], pair[1]})
      if (fd >= 0) ::close(fd);
  }
};

// A small ring of the doctor's own, for requests and registrations.
class probe_ring {
 public:
  probe_ring() { ok_ = io_uring_queue_init(8, &ring_, 0) == 0; }
  ~probe_ring() {
    if (ok_) io_uring_queue_exit(&ring_);
  }
  probe_ring(const probe_ring&) = delete;
  probe_ring& operator=(const probe_ring&) = delete;
  [[nodiscard]] bool ok() const noexcept { return ok_; }
  io_uring& get() noexcept { return ring_; }

 private:
  io_uring ring_{};
  bool ok_ = false;
};

// Submits the request `prep` fills in and returns the result of its first completion,
// or 1 when none came within a few milliseconds (the kernel keeps it pending).
template <class Prep>
int first_result(io_uring& ring, Prep prep) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr) return -EBUSY;
  prep(sqe);
  if (int r = io_uring_submit(&ring); r < 0) return r;
  __kernel_timespec wait{0, 5'000'000};
  io_uring_cqe* cqe = nullptr;
  if (io_uring_wait_cqe_timeout(&ring, &cqe, &wait) != 0 || cqe == nullptr) return 1;
  int res = cqe->res;
  io_uring_cqe_seen(&ring, cqe);
  return res;
}

// A kernel that does not know a request flag fails the request with EINVAL at once.
feature multishot(io_uring* ring, const char* name, const char* flag, const char* since, int res) {
  if (ring == nullptr) return make(name, false, true, "", "no io_uring ring of the doctor's own could be created");
  std::string tail = std::string(" (Linux ") + since + ")";
  if (res == -EINVAL)
    return make(name, false, true, "", std::string("the kernel refused ") + flag + " with EINVAL" + tail);
  if (res < 0 && res != -ENOBUFS && res != -EAGAIN)
    return make(name, false, true, "", std::string("the request failed: ") + std::strerror(-res));
  return make(name, true, true, std::string("the kernel accepted a request with ") + flag, "");
}

int multishot_accept_result(io_uring& ring, int& listener) {
  listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 || ::listen(listener, 1) != 0)
    return -errno;
  return first_result(ring,
                      [&](io_uring_sqe* sqe) { io_uring_prep_multishot_accept(sqe, listener, nullptr, nullptr, 0); });
}

int multishot_recv_result(io_uring& ring, int (&pair)[2]) {
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return -errno;
  return first_result(ring, [&](io_uring_sqe* sqe) {
    io_uring_prep_recv_multishot(sqe, pair[0], nullptr, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 0xfffe;  // no buffers: the kernel keeps it armed, or ends it with ENOBUFS
  });
}

// Registers (and removes) a one-entry provided buffer ring.
bool registers_buffer_ring(io_uring& ring) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* mem = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uint64_t>(mem);
  reg.ring_entries = 1;
  reg.bgid = 0xfffd;
  const bool ok = io_uring_register_buf_ring(&ring, &reg, 0) == 0;
  if (ok) io_uring_unregister_buf_ring(&ring, 0xfffd);
  ::munmap(mem, page);
  return ok;
}

// A send bundle on a fresh socketpair from a two-entry ring: the bytes it sent (both
// entries, 4), or -errno.
int send_bundle_result(io_uring& ring) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return -errno;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* mem = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int res = -ENOMEM;
  if (mem != MAP_FAILED) {
    static const char bytes[] = "abcd";
    auto* br = static_cast<io_uring_buf_ring*>(mem);
    io_uring_buf_ring_init(br);
    io_uring_buf_ring_add(br, const_cast<char*>(bytes), 2, 0, 1, 0);
    io_uring_buf_ring_add(br, const_cast<char*>(bytes + 2), 2, 1, 1, 1);
    io_uring_buf_ring_advance(br, 2);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<std::uint64_t>(mem);
    reg.ring_entries = 2;
    reg.bgid = 0xfffc;
    res = io_uring_register_buf_ring(&ring, &reg, 0);
    if (res == 0) {
      res = first_result(ring, [&](io_uring_sqe* sqe) {
        io_uring_prep_send(sqe, pair[0], nullptr, 0, MSG_NOSIGNAL);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = 0xfffc;
        sqe->ioprio |= IORING_RECVSEND_BUNDLE;
      });
      io_uring_unregister_buf_ring(&ring, 0xfffc);
    }
    ::munmap(mem, page);
  }
  ::close(pair[0]);
  ::close(pair[1]);
  return res;
}

// io_uring_setup with IORING_SETUP_NO_SQARRAY, by the raw syscall (liburing 2.3 would
// map an SQ array the kernel does not provide).
bool accepts_no_sqarray() {
  io_uring_params p{};
  p.flags = IORING_SETUP_NO_SQARRAY;
  long fd = ::syscall(__NR_io_uring_setup, 2, &p);
  if (fd < 0) return false;
  ::close(static_cast<int>(fd));
  return true;
}

struct opcode_row {
  int op;
  const char* name;
  const char* since;
  const char* use;  // what ringio uses it for; nullptr: not used
};

constexpr opcode_row file_and_process_opcodes[] = {
    {IORING_OP_READ, "IORING_OP_READ", "5.6", "ringio::file reads"},
    {IORING_OP_WRITE, "IORING_OP_WRITE", "5.6", "ringio::file writes"},
    {IORING_OP_OPENAT, "IORING_OP_OPENAT", "5.6", nullptr},
    {IORING_OP_STATX, "IORING_OP_STATX", "5.6", nullptr},
    {IORING_OP_FSYNC, "IORING_OP_FSYNC", "5.1", nullptr},
    {IORING_OP_FALLOCATE, "IORING_OP_FALLOCATE", "5.6", nullptr},
    {ringio::detail::op_ftruncate, "IORING_OP_FTRUNCATE", "6.9", nullptr},
    {IORING_OP_SPLICE, "IORING_OP_SPLICE", "5.7", nullptr},
    {ringio::detail::op_waitid, "IORING_OP_WAITID", "6.7", nullptr},
    {ringio::detail::op_futex_wait, "IORING_OP_FUTEX_WAIT", "6.7", nullptr},
    {ringio::detail::op_futex_wake, "IORING_OP_FUTEX_WAKE", "6.7", nullptr},
    {ringio::detail::op_epoll_wait, "IORING_OP_EPOLL_WAIT", "6.15", "ringio::epoll_wait"},
};

void add_opcodes(std::vector<feature>& out, io_uring_probe* probe) {
  for (const opcode_row& o : file_and_process_opcodes) {
    const bool yes = probe != nullptr && io_uring_opcode_supported(probe, o.op) != 0;
    std::string use = o.use != nullptr ? std::string("; ringio uses it for ") + o.use : "; ringio does not use it";
    out.push_back(make(o.name, yes, o.use != nullptr, "in the kernel's opcode probe" + use,
                       (probe == nullptr ? std::string("the opcode probe failed")
                                         : std::string("not in the kernel's opcode probe (Linux ") + o.since + ")") +
                           use));
  }
}

}  // namespace

std::vector<feature> probe_features(const ring_setup& s) {
  std::vector<feature> out;
  out.push_back(setup_flag(s, IORING_SETUP_SINGLE_ISSUER, "SINGLE_ISSUER", "6.0"));
  out.push_back(setup_flag(s, IORING_SETUP_DEFER_TASKRUN, "DEFER_TASKRUN", "6.1"));
  out.push_back(setup_flag(s, IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN", "5.19"));
  out.push_back(setup_flag(s, IORING_SETUP_SUBMIT_ALL, "SUBMIT_ALL", "5.18"));

  probe_fds fds;
  probe_ring pr;
  io_uring* ring = pr.ok() ? &pr.get() : nullptr;
  out.push_back(multishot(ring, "multishot accept", "IORING_ACCEPT_MULTISHOT", "5.19",
                          ring ? multishot_accept_result(*ring, fds.listener) : 0));
  out.push_back(multishot(ring, "multishot recv", "IORING_RECV_MULTISHOT", "6.0",
                          ring ? multishot_recv_result(*ring, fds.pair) : 0));
  const bool pbuf = ring != nullptr && registers_buffer_ring(*ring);
  out.push_back(make("provided buffer rings", pbuf, true,
                     "the kernel registered a buffer ring (IORING_REGISTER_PBUF_RING)",
                     "the kernel refused IORING_REGISTER_PBUF_RING (Linux 5.19)"));
  out.push_back(make("recv bundles", s.recv_bundle, true, "the ring reports IORING_FEAT_RECVSEND_BUNDLE",
                     "the ring lacks IORING_FEAT_RECVSEND_BUNDLE (Linux 6.10)"));
  const int bundle_sent = ring != nullptr ? send_bundle_result(*ring) : -ENOSYS;
  out.push_back(make("send bundles", s.recv_bundle && bundle_sent == 4, true,
                     "a send bundle sent both entries of a two-entry ring (batching_writer with "
                     "io_context_options::send_bundles)",
                     bundle_sent >= 0 ? std::string("the ring lacks IORING_FEAT_RECVSEND_BUNDLE (Linux 6.10)")
                                      : std::string("the kernel refused a send bundle: ") +
                                            std::strerror(-bundle_sent) + " (Linux 6.10)"));
  out.push_back(make("incremental buffers", s.pbuf_inc, true,
                     "the kernel registered a buffer ring with IOU_PBUF_RING_INC",
                     "the kernel refused IOU_PBUF_RING_INC (Linux 6.12)"));
  out.push_back(make("zero-copy send", s.send_zc, true, "IORING_OP_SEND_ZC is in the kernel's opcode probe",
                     "IORING_OP_SEND_ZC is not in the kernel's opcode probe (Linux 6.0)"));
  const bool sparse = ring != nullptr && io_uring_register_files_sparse(ring, 1) == 0;
  out.push_back(make("direct descriptors", sparse, true, "the kernel registered a sparse file table",
                     "the kernel refused a sparse file table (Linux 5.19)"));
  out.push_back(make("FIXED_FD_INSTALL", s.fixed_fd_install, true,
                     "IORING_OP_FIXED_FD_INSTALL is in the kernel's opcode probe",
                     "IORING_OP_FIXED_FD_INSTALL is not in the kernel's opcode probe (Linux 6.8); ringio "
                     "then uses no direct descriptors"));
  out.push_back(make("min-wait", s.min_wait, true, "the ring reports IORING_FEAT_MIN_TIMEOUT",
                     "the ring lacks IORING_FEAT_MIN_TIMEOUT (Linux 6.12)"));
  out.push_back(make("no-iowait", s.no_iowait, true,
                     "the ring reports IORING_FEAT_NO_IOWAIT (a sleeping loop is not I/O wait)",
                     "the ring lacks IORING_FEAT_NO_IOWAIT (Linux 6.15); a sleeping loop counts as I/O wait"));
  out.push_back(make("ring resize", ringio::detail::kernel_resizes_rings(), true,
                     "the kernel resized a DEFER_TASKRUN ring (IORING_REGISTER_RESIZE_RINGS): rings start "
                     "small and grow under load",
                     "the kernel refused IORING_REGISTER_RESIZE_RINGS (Linux 6.13); rings have their full "
                     "size from the start"));
  const bool ring_fd = ring != nullptr && io_uring_register_ring_fd(ring) == 1;
  out.push_back(make("registered ring fd", ring_fd, true,
                     "the kernel registered the ring's fd (IORING_REGISTER_RING_FDS)",
                     "the kernel refused IORING_REGISTER_RING_FDS (Linux 5.18)"));
  out.push_back(make("MSG_RING", s.msg_ring, true,
                     "IORING_OP_MSG_RING is in the kernel's opcode probe (cross-loop wake-ups)",
                     "IORING_OP_MSG_RING is not in the kernel's opcode probe (Linux 5.18); wake-ups use an eventfd"));
  const bool no_sqarray = accepts_no_sqarray();
  out.push_back(make("NO_SQARRAY", no_sqarray, false,
                     "the kernel accepted IORING_SETUP_NO_SQARRAY; ringio does not use it",
                     "the kernel refused IORING_SETUP_NO_SQARRAY (Linux 6.6); ringio does not use it"));
  std::unique_ptr<io_uring_probe, void (*)(io_uring_probe*)> probe(ring ? io_uring_get_probe_ring(ring) : nullptr,
                                                                   io_uring_free_probe);
  add_opcodes(out, probe.get());
  return out;
}

}  // namespace ringio::doctor::detail
