// SPDX-License-Identifier: Apache-2.0
#include "ringio/net/buffer_pool.hpp"

#include <liburing.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "core/backend.hpp"
#include "net/buffer_pool_core.hpp"
#include "net/multishot_recv_state.hpp"

namespace ringio {
namespace detail {
namespace {

void* map(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::system_category(), "mmap (buffer_pool)");
  return p;
}

}  // namespace

buffer_pool_core::buffer_pool_core(io_context& ctx, unsigned count, std::size_t size, buffer_pool_options opts)
    : ctx_(&ctx), size_(size) {
  if (count == 0 || count > 32768) throw std::invalid_argument("buffer_pool: count must be in 1..32768");
  if (size == 0 || size > (std::size_t{1} << 31)) throw std::invalid_argument("buffer_pool: size must be in 1..2^31");
  count_ = 1;
  while (count_ < count) count_ <<= 1;
  available_ = count_;
  memory_ = static_cast<std::byte*>(map(std::size_t{count_} * size_));
  // Kernel mode: a ring of buffer descriptors the kernel consumes and we refill.
  ring_bytes_ = std::size_t{count_} * sizeof(io_uring_buf);
  ring_ = map(ring_bytes_);
  const unsigned features = ctx_->buffer_ring_features();
  const bool incremental = opts.incremental && (features & feature_incremental) != 0;
  int g = ctx_->register_buffer_ring(ring_, count_, incremental);
  if (g >= 0) {
    group_ = g;
    kernel_selected_ = true;
    incremental_ = incremental;
    bundle_ = opts.bundle && (features & feature_recv_bundle) != 0;
    slots_.resize(count_);
    pos_of_.resize(count_);
    ring_size_ = opts.initial_ring_buffers == 0 || incremental_ ? count_ : std::min(opts.initial_ring_buffers, count_);
    auto* br = static_cast<io_uring_buf_ring*>(ring_);
    io_uring_buf_ring_init(br);
    const int mask = static_cast<int>(count_ - 1);
    for (unsigned i = 0; i < ring_size_; ++i) {
      io_uring_buf_ring_add(br, address(i), static_cast<unsigned>(size_), static_cast<unsigned short>(i), mask,
                            static_cast<int>(i));
      pos_of_[i] = static_cast<std::uint16_t>(i);
    }
    io_uring_buf_ring_advance(br, static_cast<int>(ring_size_));
    stack_.reserve(count_ - ring_size_);
    for (unsigned i = count_; i > ring_size_; --i) stack_.push_back(i - 1);  // lowest id on top
    return;
  }
  // Readiness backends (or a kernel without buffer rings): a plain free list.
  ::munmap(ring_, ring_bytes_);
  ring_ = nullptr;
  free_.reserve(count_);
  for (unsigned i = count_; i > 0; --i) free_.push_back(i - 1);
}

buffer_pool_core::~buffer_pool_core() {
  // The ring was unregistered when the pool went (detach_from_context): the context
  // may be gone by now, so nothing here may touch it.
  if (ring_ != nullptr) ::munmap(ring_, ring_bytes_);
  ::munmap(memory_, std::size_t{count_} * size_);
}

void buffer_pool_core::detach_from_context() noexcept {
  if (ctx_ == nullptr) return;
  sweep_.stop();
  // The kernel stops selecting from the ring (a multishot recv still armed on it ends
  // with ENOBUFS); buffers it already filled stay valid in memory_ until released.
  if (group_ >= 0) ctx_->unregister_buffer_ring(group_);
  group_ = -1;
  ctx_ = nullptr;
}

int buffer_pool_core::take_free() noexcept {
  if (free_.empty()) return -1;
  unsigned id = free_.back();
  free_.pop_back();
  --available_;
  return static_cast<int>(id);
}

unsigned buffer_pool_core::next_in_ring(std::uint16_t pos) const noexcept {
  // The kernel took a bundle's buffers from consecutive ring entries. Their slots are
  // not written again before this completion is handled: every entry from the
  // bundle's first to the tail holds a buffer not yet returned.
  const auto* br = static_cast<const io_uring_buf_ring*>(ring_);
  return br->bufs[pos & (count_ - 1)].bid;
}

void buffer_pool_core::refill(unsigned id) noexcept {
  auto* br = static_cast<io_uring_buf_ring*>(ring_);
  pos_of_[id] = br->tail;
  io_uring_buf_ring_add(br, address(id), static_cast<unsigned>(size_), static_cast<unsigned short>(id),
                        static_cast<int>(count_ - 1), 0);
  io_uring_buf_ring_advance(br, 1);
}

void buffer_pool_core::top_up() noexcept {
  while (in_ring() < ring_size_ && !stack_.empty()) {
    refill(stack_.back());
    stack_.pop_back();
  }
}

void buffer_pool_core::ran_dry() noexcept {
  if (stack_.empty() || group_ < 0) return;
  ring_size_ = std::min(ring_size_ * 2, count_);
  top_up();
}

void buffer_pool_core::received_nothing(unsigned id, bool bundle) noexcept {
  // Without data the kernel consumed a whole, single buffer only: a bundle commits
  // no buffer for no bytes, an incremental ring keeps its head buffer.
  if (bundle || incremental_ || group_ < 0) return;
  if (slots_[id].busy) return;  // cannot happen: the kernel never picks a busy buffer
  refill(id);
}

void buffer_pool_core::give_back(unsigned id) noexcept {
  if (kernel_selected_) {
    slot& s = slots_[id];
    if (s.refs > 0 && --s.refs > 0) return;
    if (s.kernel_keeps && group_ >= 0) return;  // the kernel still fills the rest
    s.busy = false;
    s.offset = 0;
    s.kernel_keeps = false;
  }
  if (group_ >= 0) {
    if (in_ring() < ring_size_) {
      refill(id);
    } else {
      stack_.push_back(id);  // (capacity reserved) taken again first: the fewest pages touched
    }
    ++available_;
  } else {
    ++available_;
    free_.push_back(id);
  }
  wake_starved();
}

void buffer_pool_core::wake_starved() noexcept {
  if (!starved_.empty()) {
    std::vector<multishot_recv_state*> waiting;
    waiting.swap(starved_);
    for (multishot_recv_state* r : waiting) r->buffers_returned();
  }
}

void buffer_pool_core::wait_for_buffer(multishot_recv_state& r) {
  for (multishot_recv_state* s : starved_)
    if (s == &r) return;
  starved_.push_back(&r);
}

void buffer_pool_core::forget(multishot_recv_state& r) noexcept {
  for (auto& s : starved_)
    if (s == &r) {
      s = starved_.back();
      starved_.pop_back();
      return;
    }
}

}  // namespace detail

pooled_buffer::pooled_buffer(detail::buffer_pool_core* core, unsigned id, std::size_t offset, std::size_t size) noexcept
    : core_(core), data_(core->address(id) + offset), id_(id), size_(size) {
  core_->acquire();
}

void pooled_buffer::release() noexcept {
  if (core_ != nullptr) {
    detail::buffer_pool_core* c = std::exchange(core_, nullptr);
    c->give_back(id_);
    c->release();
  }
  size_ = 0;
  data_ = nullptr;
}

buffer_pool::buffer_pool(io_context& ctx, unsigned count, std::size_t size, buffer_pool_options opts)
    : core_(new detail::buffer_pool_core(ctx, count, size, opts)) {}
buffer_pool::~buffer_pool() {
  core_->detach_from_context();
  core_->release();
}
unsigned buffer_pool::count() const noexcept { return core_->count(); }
std::size_t buffer_pool::buffer_size() const noexcept { return core_->size(); }
unsigned buffer_pool::available() const noexcept { return core_->available(); }
bool buffer_pool::in_kernel() const noexcept { return core_->group() >= 0; }
bool buffer_pool::bundles() const noexcept { return core_->bundles(); }
bool buffer_pool::incremental() const noexcept { return core_->incremental(); }

}  // namespace ringio
