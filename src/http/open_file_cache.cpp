// SPDX-License-Identifier: Apache-2.0
#include "open_file_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <memory>

namespace ringio::http::detail {

file_facts file_facts::of(const struct stat& st) noexcept {
  return {.dev = static_cast<std::uint64_t>(st.st_dev),
          .ino = static_cast<std::uint64_t>(st.st_ino),
          .size = static_cast<std::uint64_t>(st.st_size),
          .mtime_sec = static_cast<std::int64_t>(st.st_mtim.tv_sec),
          .mtime_nsec = static_cast<std::int64_t>(st.st_mtim.tv_nsec)};
}

std::size_t format_etag(const file_facts& f, char* out) noexcept {
  const std::uint64_t ns =
      static_cast<std::uint64_t>(f.mtime_sec) * 1'000'000'000u + static_cast<std::uint64_t>(f.mtime_nsec);
  const int n = std::snprintf(out, 48, "\"%llx-%llx\"", static_cast<unsigned long long>(f.size),
                              static_cast<unsigned long long>(ns));
  return static_cast<std::size_t>(n);
}

open_file_cache::open_file_cache(std::size_t capacity, std::int64_t max_age_ns) noexcept
    : capacity_(capacity), max_age_ns_(max_age_ns) {
  head_.prev = head_.next = &head_;
}

open_file_cache::~open_file_cache() {
  while (evict_oldest()) {
  }
}

cached_file* open_file_cache::find(std::string_view key) noexcept {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  cached_file* e = it->second;
  if (head_.next != e) {
    unlink(*e);
    push_front(*e);
  }
  return e;
}

cached_file& open_file_cache::insert(std::string_view key, int fd, const struct stat& st, std::int64_t now_ns) {
  auto fresh = std::make_unique<cached_file>();
  fresh->fd = fd;      // from here on closed by on_unused
  fresh->holders = 1;  // the cache's own hold
  fresh->unused = &open_file_cache::on_unused;
  cached_file* e = fresh.release();
  try {
    e->key.assign(key);
    if (cached_file* old = find(key)) erase(*old);
    while (map_.size() >= capacity_ && evict_oldest()) {
    }
    map_.emplace(std::string_view(e->key), e);
  } catch (...) {
    e->cached = false;
    on_unused(*e);
    throw;
  }
  e->facts = file_facts::of(st);
  e->checked_ns = now_ns;
  e->etag_size = static_cast<std::uint8_t>(format_etag(e->facts, e->etag));
  format_http_date(static_cast<std::time_t>(e->facts.mtime_sec), e->last_modified);
  push_front(*e);
  return *e;
}

void open_file_cache::erase(cached_file& e) noexcept {
  if (!e.cached) return;
  e.cached = false;
  map_.erase(std::string_view(e.key));
  unlink(e);
  // The cache's own hold, let go.
  if (--e.holders == 0) on_unused(e);
}

bool open_file_cache::evict_oldest() noexcept {
  if (head_.prev == &head_) return false;
  erase(*head_.prev);
  return true;
}

void open_file_cache::on_unused(ringio::detail::shared_fd_state& s) noexcept {
  auto* e = static_cast<cached_file*>(&s);
  if (e->fd >= 0) ::close(e->fd);
  delete e;
}

void open_file_cache::unlink(cached_file& e) noexcept {
  e.prev->next = e.next;
  e.next->prev = e.prev;
  e.prev = e.next = nullptr;
}

void open_file_cache::push_front(cached_file& e) noexcept {
  e.next = head_.next;
  e.prev = &head_;
  head_.next->prev = &e;
  head_.next = &e;
}

}  // namespace ringio::http::detail
