// SPDX-License-Identifier: Apache-2.0
// sendfile(2) driven by readiness: io_uring waits with a poll request, the readiness
// backends with their own wait lists. (IORING_OP_SPLICE through a pipe would need no
// poll, but a splice into a full socket blocks an io-wq worker thread per connection:
// thousands of slow readers would be thousands of kernel threads.)
#include "ringio/net/send_file.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <sys/sendfile.h>

#include <algorithm>
#include <cerrno>

#include "core/sigpipe.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {
namespace {

constexpr std::uint64_t max_chunk = 1 << 30;

// One sendfile: bytes sent (> 0), 0 at the end of the file, or -errno.
int send_some(send_file_op& op) noexcept {
  ignore_sigpipe_once();
  if (!op.checked_blocking) {  // sendfile has no MSG_DONTWAIT: the socket must not block
    op.checked_blocking = true;
    int flags = ::fcntl(op.fd, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK) == 0 && ::fcntl(op.fd, F_SETFL, flags | O_NONBLOCK) == 0)
      op.made_nonblocking = true;
  }
  auto off = static_cast<off_t>(op.offset + op.done);
  const std::size_t n = static_cast<std::size_t>(std::min(op.count - op.done, max_chunk));
  ssize_t r = ::sendfile(op.fd, op.file_fd, &off, n);
  return r >= 0 ? static_cast<int>(r) : -errno;
}

void restore_blocking(int fd) noexcept {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

// io_uring: wait until writable (the request is a poll).
void send_file_prepare(op_base& b, io_uring_sqe& sqe) noexcept { io_uring_prep_poll_add(&sqe, b.fd, POLLOUT); }

int send_file_attempt(op_base& b) noexcept { return send_some(static_cast<send_file_op&>(b)); }

// After each result: count it, send more while the socket takes it, and wait again
// (true: the next request is in flight) or finish (false).
bool send_file_step(op_base& b) noexcept {
  auto& op = static_cast<send_file_op&>(b);
  const bool uring = op.ctx->backend() == backend_kind::uring;
  for (;;) {
    int r = op.res;
    if (uring && r >= 0) {  // a poll result: writable (or an error condition sendfile reports)
      r = send_some(op);
    }
    if (r > 0) {
      op.done += static_cast<std::uint64_t>(r);
      if (op.done < op.count) {
        if (uring) {
          op.res = 0;  // try again at once: the socket may take more
          continue;
        }
        if (op.ctx->start(op)) continue;  // finished at once: res is set
        return true;
      }
      op.res = 0;
    } else if (r == -EAGAIN && uring) {
      if (op.ctx->start(op)) continue;  // the poll request finished at once: res is set
      return true;
    } else {
      op.res = r;  // 0: the file ended before count bytes (a short count)
    }
    if (op.made_nonblocking) restore_blocking(op.fd);
    op.made_nonblocking = false;
    return false;
  }
}

}  // namespace

const op_vtable send_file_vtable = {.prepare = send_file_prepare,
                                    .attempt = send_file_attempt,
                                    .on_cqe = nullptr,
                                    .step = send_file_step,
                                    .complete = resume_waiter};

}  // namespace ringio::detail
