// SPDX-License-Identifier: Apache-2.0
// ringio/detail/fd_handle.hpp — owns a file descriptor and remembers its blocking mode:
// io_uring wants blocking sockets (its internal poll retries them), readiness backends
// need non-blocking ones. The mode is switched lazily by the operation that needs it.
// It may instead own a direct descriptor: a slot of one io_uring's file table, which
// only operations on that ring can use (IOSQE_FIXED_FILE).
#pragma once

#include <utility>

namespace ringio {
class io_context;
}

namespace ringio::detail {

class fd_handle {
 public:
  fd_handle() noexcept = default;
  explicit fd_handle(int fd, bool nonblocking = false) noexcept : fd_(fd), nonblocking_(nonblocking) {}
  /// Owns slot `index` of the file table of `owner`'s ring.
  static fd_handle direct(int index, io_context& owner) noexcept {
    fd_handle h(index);
    h.owner_ = &owner;
    return h;
  }
  fd_handle(fd_handle&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), nonblocking_(o.nonblocking_), owner_(std::exchange(o.owner_, nullptr)) {}
  fd_handle& operator=(fd_handle&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
      nonblocking_ = o.nonblocking_;
      owner_ = std::exchange(o.owner_, nullptr);
    }
    return *this;
  }
  fd_handle(const fd_handle&) = delete;
  fd_handle& operator=(const fd_handle&) = delete;
  ~fd_handle() { reset(); }

  /// The descriptor, or the table index of a direct descriptor.
  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  [[nodiscard]] bool nonblocking() const noexcept { return nonblocking_; }
  /// Whether get() is an index in the file table of direct_owner()'s ring.
  [[nodiscard]] bool is_direct() const noexcept { return owner_ != nullptr; }
  [[nodiscard]] io_context* direct_owner() const noexcept { return owner_; }
  /// Gives up ownership (of a direct descriptor too: its slot then stays taken).
  int release() noexcept {
    owner_ = nullptr;
    return std::exchange(fd_, -1);
  }
  /// Closes the descriptor now (synchronously; a direct one through its ring, on the
  /// ring's thread: elsewhere its slot stays taken until the ring goes away).
  void reset() noexcept;
  /// Turns a direct descriptor into a normal one (IORING_OP_FIXED_FD_INSTALL) and frees
  /// its slot; nothing for a normal one. Returns 0 or -errno (then it is unchanged).
  int install() noexcept;
  /// Puts the descriptor in (non-)blocking mode; returns 0 or -errno.
  int set_nonblocking(bool on) noexcept;

 private:
  int fd_ = -1;
  bool nonblocking_ = false;
  io_context* owner_ = nullptr;  // set: fd_ is a direct descriptor of this loop's ring
};

}  // namespace ringio::detail
