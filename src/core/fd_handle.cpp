// SPDX-License-Identifier: Apache-2.0
#include "ringio/detail/fd_handle.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "core/sys.hpp"
#include "ringio/detail/fd_generation.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {
namespace {

// Two-level table: chunks are allocated on first use and never freed.
constexpr unsigned chunk_bits = 16;
constexpr unsigned chunk_size = 1u << chunk_bits;
constexpr unsigned max_chunks = 256;  // fds up to 2^24

struct chunk {
  std::atomic<std::uint32_t> gen[chunk_size];
};
std::atomic<chunk*> chunks[max_chunks];

chunk* chunk_for(int fd, bool create) noexcept {
  unsigned idx = static_cast<unsigned>(fd) >> chunk_bits;
  if (idx >= max_chunks) return nullptr;
  chunk* c = chunks[idx].load(std::memory_order_acquire);
  if (c != nullptr || !create) return c;
  auto* fresh = new (std::nothrow) chunk{};
  if (fresh == nullptr) return nullptr;
  if (!chunks[idx].compare_exchange_strong(c, fresh, std::memory_order_acq_rel)) {
    delete fresh;
    return c;
  }
  return fresh;
}

}  // namespace

void note_fd_closed(int fd) noexcept {
  if (fd < 0) return;
  if (chunk* c = chunk_for(fd, true))
    c->gen[static_cast<unsigned>(fd) & (chunk_size - 1)].fetch_add(1, std::memory_order_relaxed);
}

std::uint32_t fd_generation(int fd) noexcept {
  if (fd < 0) return 0;
  chunk* c = chunk_for(fd, false);
  if (c == nullptr) return (static_cast<unsigned>(fd) >> chunk_bits) >= max_chunks ? ~0u : 0u;
  return c->gen[static_cast<unsigned>(fd) & (chunk_size - 1)].load(std::memory_order_relaxed);
}

void fd_handle::reset() noexcept {
  if (fd_ < 0) return;
  if (owner_ != nullptr) {
    // Only the ring's own thread may submit; elsewhere the slot stays taken until the
    // ring goes away (its table is released with it).
    if (owner_->on_loop_thread()) owner_->close_direct(fd_);
    owner_ = nullptr;
    fd_ = -1;
    return;
  }
  note_fd_closed(fd_);
  ::ringio::detail::sys::close(fd_);
  fd_ = -1;
}

int fd_handle::install() noexcept {
  if (owner_ == nullptr) return 0;
  if (!owner_->on_loop_thread()) return -EXDEV;  // the slot is reachable only from its ring
  int fd = owner_->install_direct(fd_);
  if (fd < 0) return fd;
  owner_->close_direct(fd_);
  owner_ = nullptr;
  fd_ = fd;
  nonblocking_ = false;  // a blocking socket, as accept made it
  return 0;
}

int fd_handle::set_nonblocking(bool on) noexcept {
  if (owner_ != nullptr) return -EBADF;  // no descriptor to change
  if (on == nonblocking_ || fd_ < 0) return 0;
  int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0) return -errno;
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd_, F_SETFL, flags) < 0) return -errno;
  nonblocking_ = on;
  return 0;
}

}  // namespace ringio::detail
