// ringio/detail/fd_handle.hpp — owns a file descriptor and remembers its blocking mode:
// io_uring wants blocking sockets (its internal poll retries them), readiness backends
// need non-blocking ones. The mode is switched lazily by the operation that needs it.
#pragma once

#include <utility>

namespace ringio::detail {

class fd_handle {
 public:
  fd_handle() noexcept = default;
  explicit fd_handle(int fd, bool nonblocking = false) noexcept : fd_(fd), nonblocking_(nonblocking) {}
  fd_handle(fd_handle&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), nonblocking_(o.nonblocking_) {}
  fd_handle& operator=(fd_handle&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
      nonblocking_ = o.nonblocking_;
    }
    return *this;
  }
  fd_handle(const fd_handle&) = delete;
  fd_handle& operator=(const fd_handle&) = delete;
  ~fd_handle() { reset(); }

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  [[nodiscard]] bool nonblocking() const noexcept { return nonblocking_; }
  /// Gives up ownership.
  int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the descriptor now (synchronously).
  void reset() noexcept;
  /// Puts the descriptor in (non-)blocking mode; returns 0 or -errno.
  int set_nonblocking(bool on) noexcept;

 private:
  int fd_ = -1;
  bool nonblocking_ = false;
};

}  // namespace ringio::detail
