// SPDX-License-Identifier: Apache-2.0
// Direct descriptors: a sparse file table registered with the ring. Sockets accepted
// into it are used with IOSQE_FIXED_FILE, which saves the file lookup and reference
// (fget/fput) of every operation; the backend keeps the count of slots taken so that
// accepts fall back to normal descriptors instead of failing when it is full.
#include <sys/resource.h>

#include <cerrno>
#include <string>

#include "backend/uring/uring_backend.hpp"
#include "backend/uring/uring_compat.hpp"

namespace ringio::detail {

namespace {
constexpr unsigned kernel_max_table = 1U << 20;  // IORING_MAX_FIXED_FILES
}

void uring_backend::setup_direct(unsigned wanted) noexcept {
  if (wanted == 0) return;
  if (poll_mode_) {
    direct_off_reason_ = "uring-poll makes its own syscalls";
    return;
  }
  if (!setup_.fixed_fd_install) {
    direct_off_reason_ = "no IORING_OP_FIXED_FD_INSTALL";
    return;
  }
  // The kernel refuses a table larger than RLIMIT_NOFILE.
  unsigned size = wanted < kernel_max_table ? wanted : kernel_max_table;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < size)
    size = static_cast<unsigned>(lim.rlim_cur);
  if (size == 0 || io_uring_register_files_sparse(&ring_, size) < 0) {
    direct_off_reason_ = "file table registration failed";
    return;
  }
  direct_size_ = size;
}

std::string uring_backend::describe_direct() const {
  if (direct_size_ != 0) return "direct descriptors on: " + std::to_string(direct_size_) + " slots";
  return std::string("direct descriptors off: ") + direct_off_reason_;
}

void uring_backend::use_fixed_file(io_uring_sqe& sqe) noexcept { sqe.flags |= IOSQE_FIXED_FILE; }

void uring_backend::close_direct(int index) noexcept {
  if (direct_used_ > 0) --direct_used_;
  // In SQ order before any later accept, so the slot is free by the time one runs.
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_close_direct(sqe, static_cast<unsigned>(index));
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  io_uring_sqe_set_data64(sqe, 0);
}

// Synchronous: submits the install and waits for its CQE alone. Other CQEs that come
// meanwhile are stashed (dispatched, in order, by the next reap), never dispatched
// here: the caller is in the middle of a task. Cost: one io_uring_enter that also
// submits whatever was queued (measured with the rest in docs/performance.md).
int uring_backend::install_direct(int index) noexcept {
  if (direct_size_ == 0) return -EBADF;
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_rw(op_fixed_fd_install, sqe, index, nullptr, 0, 0);
  sqe->flags = IOSQE_FIXED_FILE;
  sqe->rw_flags = 0;  // install_fd_flags: 0 keeps O_CLOEXEC
  io_uring_sqe_set_data64(sqe, ud_direct_install);
  for (;;) {
    int r = io_uring_submit_and_wait(&ring_, 1);
    ++st_.stats.kernel_waits;
    if (r < 0 && r != -EINTR && r != -EBUSY && r != -EAGAIN && r != -ETIME) return r;
    io_uring_cqe* cqes[64];
    unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, 64);
    int found = 0;
    bool done = false;
    for (unsigned i = 0; i < n; ++i) {
      if (cqes[i]->user_data == ud_direct_install) {
        found = cqes[i]->res;
        done = true;
      } else {
        stash_.push_back({cqes[i]->user_data, cqes[i]->res, cqes[i]->flags});
      }
    }
    io_uring_cq_advance(&ring_, n);
    if (done) return found;
  }
}

}  // namespace ringio::detail
