// SPDX-License-Identifier: Apache-2.0
// open_file_cache — the files of one static_files root that one loop keeps open: each
// descriptor with what a response needs of its stat (size, modification time, ETag,
// Last-Modified), keyed by the path below the root, at most `capacity` of them, the
// least recently used evicted first. Loop thread only: no locks. Entries are lent to
// responses as shared_fds; the cache holds one of an entry's holders itself, so an
// evicted entry whose file is still being sent closes only when that send is done.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <unordered_map>

#include "http_date.hpp"
#include "ringio/detail/shared_fd.hpp"

namespace ringio::http::detail {

/// A regular file's identity and validators, from fstat or statx.
struct file_facts {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_sec = 0;
  std::int64_t mtime_nsec = 0;

  static file_facts of(const struct stat& st) noexcept;
  friend bool operator==(const file_facts&, const file_facts&) = default;
};

/// An open file of the cache (a shared_fd_state: the descriptor and its holders).
struct cached_file : ringio::detail::shared_fd_state {
  std::string key;  // the path below the root
  file_facts facts;
  std::int64_t checked_ns = 0;  // when the path was last seen to name this file (monotonic)
  char etag[48]{};
  std::uint8_t etag_size = 0;
  char last_modified[http_date_size]{};
  std::string fields;           // the response's header fields, formatted once (empty: not yet)
  cached_file* prev = nullptr;  // recency list, most recent first
  cached_file* next = nullptr;
  bool cached = true;  // still in the cache's map and list

  [[nodiscard]] std::string_view etag_view() const noexcept { return {etag, etag_size}; }
  [[nodiscard]] std::string_view last_modified_view() const noexcept { return {last_modified, http_date_size}; }
};

/// The ETag of a file: "size-mtime_ns" in hex, written to `out` (48 bytes); its size.
std::size_t format_etag(const file_facts& f, char* out) noexcept;

class open_file_cache {
 public:
  open_file_cache(std::size_t capacity, std::int64_t max_age_ns) noexcept;
  ~open_file_cache();
  open_file_cache(const open_file_cache&) = delete;
  open_file_cache& operator=(const open_file_cache&) = delete;

  /// The entry for `key` (now the most recently used), or null.
  cached_file* find(std::string_view key) noexcept;
  /// Caches `fd` (a regular file, whose stat is `st`) as `key`, checked at `now_ns`,
  /// replacing any entry of that key and evicting the least recently used when full.
  /// The cache owns `fd` from here on, also if this throws.
  cached_file& insert(std::string_view key, int fd, const struct stat& st, std::int64_t now_ns);
  /// Drops `e` from the cache (its descriptor closes once no response holds it).
  void erase(cached_file& e) noexcept;
  /// Drops the least recently used entry; false if the cache is empty.
  bool evict_oldest() noexcept;
  /// Whether an entry checked at `checked_ns` must be checked again at `now_ns`.
  [[nodiscard]] bool expired(const cached_file& e, std::int64_t now_ns) const noexcept {
    return now_ns - e.checked_ns >= max_age_ns_;
  }
  [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }

 private:
  static void on_unused(ringio::detail::shared_fd_state& s) noexcept;
  void unlink(cached_file& e) noexcept;
  void push_front(cached_file& e) noexcept;

  std::size_t capacity_;
  std::int64_t max_age_ns_;
  std::unordered_map<std::string_view, cached_file*> map_;  // keys view the entries' own
  cached_file head_;                                        // list sentinel
};

}  // namespace ringio::http::detail
