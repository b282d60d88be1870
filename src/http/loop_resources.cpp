// SPDX-License-Identifier: Apache-2.0
#include "loop_resources.hpp"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>

#include "ringio/detail/clock.hpp"
#include "ringio/detail/frame_allocator.hpp"
#include "ringio/io_context.hpp"

namespace ringio::http::detail {

loop_resources::loop_resources(io_context& ctx)
    : ctx_(ctx), pool_(ctx, pool_buffers, pool_buffer_size, {.initial_ring_buffers = initial_ring_buffers}) {
  static const ringio::detail::op_vtable vt = {
      .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = &loop_resources::on_trim};
  check_.vt = &vt;
  check_.self = this;
  static const ringio::detail::op_vtable sweep_vt = {.prepare = nullptr,
                                                     .attempt = nullptr,
                                                     .on_cqe = nullptr,
                                                     .step = nullptr,
                                                     .complete = &loop_resources::on_sweep};
  sweep_.vt = &sweep_vt;
  sweep_.self = this;
  watched_.prev = watched_.next = &watched_;
}

loop_resources::~loop_resources() {
  if (scheduled_) ctx_.cancel_check(check_);
  if (sweeping_) ctx_.cancel_check(sweep_);
  while (free_ != nullptr) delete std::exchange(free_, free_->next_free);
}

request_state* loop_resources::acquire(std::size_t max_head_bytes) {
  request_state* s = free_;
  if (s != nullptr) {
    free_ = s->next_free;
    low_water_ = std::min(low_water_, --cached_);
  } else {
    s = new request_state;
  }
  try {
    s->prepare(max_head_bytes);
  } catch (...) {
    delete s;
    throw;
  }
  ++lent_;
  return s;
}

void loop_resources::release(request_state* s) noexcept {
  --lent_;
  s->recycle();
  s->next_free = free_;
  free_ = s;
  ++cached_;
  if (!scheduled_) {
    low_water_ = cached_;
    spare_stops_low_ = spare_stops_.size();
    schedule_trim();
  }
}

std::stop_source loop_resources::take_stop_source() {
  if (spare_stops_.empty()) return {};
  std::stop_source s = std::move(spare_stops_.back());
  spare_stops_.pop_back();
  spare_stops_low_ = std::min(spare_stops_low_, spare_stops_.size());
  return s;
}

void loop_resources::give_back(std::stop_source& s) noexcept {
  std::stop_source taken = std::exchange(s, std::stop_source(std::nostopstate));
  if (!taken.stop_possible() || taken.stop_requested()) return;
  // Allocates only beyond the high-water mark; without memory the source is freed.
  try {
    spare_stops_.push_back(std::move(taken));
  } catch (...) {
    return;
  }
  if (!scheduled_) {
    low_water_ = cached_;
    spare_stops_low_ = spare_stops_.size();
    schedule_trim();
  }
}

void loop_resources::connection_opened() noexcept { open_high_ = std::max(open_high_, ++open_); }

void loop_resources::connection_closed() noexcept {
  --open_;
  if (open_high_ >= open_ + storm_size && open_ < open_high_ / 2) {
    open_high_ = open_;
    storm_ended_ = true;
    if (!scheduled_) schedule_trim();
  }
}

void loop_resources::watch(sweep_hook& h, std::int64_t tick_ms) noexcept {
  h.prev = watched_.prev;
  h.next = &watched_;
  watched_.prev->next = &h;
  watched_.prev = &h;
  if (tick_ms < tick_ms_) tick_ms_ = tick_ms;  // (a sweep already scheduled keeps its time)
  if (!sweeping_) schedule_sweep();
}

void loop_resources::unwatch(sweep_hook& h) noexcept {
  if (h.next == nullptr) return;
  if (cursor_ == &h) cursor_ = h.next;
  h.prev->next = h.next;
  h.next->prev = h.prev;
  h.prev = h.next = nullptr;
}

void loop_resources::schedule_sweep() noexcept {
  sweep_.deadline_ns = ringio::detail::monotonic_ns() + tick_ms_ * 1'000'000;
  try {
    ctx_.schedule_check(sweep_);
    sweeping_ = true;
  } catch (...) {  // no memory for the timer: the next watch() tries again
  }
}

void loop_resources::on_sweep(ringio::detail::op_base& op) noexcept {
  loop_resources& self = *static_cast<sweep_check&>(op).self;
  self.sweeping_ = false;
  // on_tick() may stop a connection, but that only requests a stop: nothing leaves the
  // list before the sweep ends. The cursor keeps the walk right if one does anyway.
  const std::chrono::milliseconds elapsed(self.tick_ms_);
  for (self.cursor_ = self.watched_.next; self.cursor_ != &self.watched_;) {
    sweep_hook* h = self.cursor_;
    self.cursor_ = h->next;
    connection_tick(*h, elapsed);
  }
  self.cursor_ = nullptr;
  if (self.watched_.next != &self.watched_) self.schedule_sweep();
}

// Hands the heap's free pages back to the kernel, which glibc does not do by itself for
// memory freed in the middle of the heap. malloc_trim() does that, but it never shrinks
// the top of a thread's arena (where most of a storm's memory ends up); free() of a
// chunk above FASTBIN_CONSOLIDATION_THRESHOLD (64 KiB) does, so free one.
void loop_resources::release_free_heap() noexcept {
  ::malloc_trim(0);
  if (void* p = std::malloc(96 * 1024)) std::free(p);
}

void loop_resources::schedule_trim() noexcept {
  check_.deadline_ns = ringio::detail::monotonic_ns() + trim_interval_ns;
  try {
    ctx_.schedule_check(check_);
    scheduled_ = true;
  } catch (...) {  // no memory for the timer: the cache is trimmed on a later release
  }
}

void loop_resources::on_trim(ringio::detail::op_base& op) noexcept {
  loop_resources& self = *static_cast<trim_check&>(op).self;
  self.scheduled_ = false;
  std::size_t unused = self.low_water_;
  for (std::size_t i = 0; i < unused; ++i) delete std::exchange(self.free_, self.free_->next_free);
  self.cached_ -= unused;
  self.low_water_ = self.cached_;
  const std::size_t unused_stops = self.spare_stops_low_;
  self.spare_stops_.erase(self.spare_stops_.end() - static_cast<std::ptrdiff_t>(unused_stops), self.spare_stops_.end());
  self.spare_stops_low_ = self.spare_stops_.size();
  bool freed = unused > 0 || unused_stops > 0;
  if (self.storm_ended_) {
    self.storm_ended_ = false;
    ringio::detail::frame_cache_trim();
    if (self.spare_stops_.empty()) std::vector<std::stop_source>().swap(self.spare_stops_);
    freed = true;
  }
  if (freed) release_free_heap();
  if (self.cached_ > 0 || !self.spare_stops_.empty()) self.schedule_trim();
}

}  // namespace ringio::http::detail
