// SPDX-License-Identifier: Apache-2.0
// ringio/http/static_files.hpp — a handler serving the files under a directory: GET
// and HEAD, Content-Type by extension, index.html for directories, ETag and
// Last-Modified with conditional requests (If-Match and If-Unmodified-Since: 412;
// If-None-Match and If-Modified-Since: 304), byte ranges (206, several as
// multipart/byteranges; 416; If-Range). No request can reach outside the root: ".." segments (also
// percent-encoded) get 404, and paths are resolved by the kernel with
// RESOLVE_BENEATH, so symlinks leading out of the root get 403. Each loop keeps the
// files it served open for a while (the open-file cache, see static_files_options).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "ringio/http/request.hpp"
#include "ringio/http/response.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

namespace detail {
struct static_root;
}

/// How static_files serves a directory. Every field has a default.
struct static_files_options {
  /// Served for a directory path ending in '/'.
  std::string index = "index.html";
  /// A Cache-Control value added to file responses, if not empty.
  std::string cache_control{};
  /// Open-file cache: how many files each loop (io_context) keeps open for this
  /// handler, with their size, modification time and validators, the least recently
  /// used closed first; 0 turns the cache off (every request opens, stats and closes
  /// its file). Never more than an eighth of RLIMIT_NOFILE's soft limit (as it was
  /// when the loop first used the handler), and all handlers' caches of a loop together
  /// never more than an eighth of it; when an open fails for want of descriptors, half
  /// of the loop's cached files are closed and the open is tried again.
  std::size_t open_file_cache_entries = 1024;
  /// Open-file cache: how long a cached file is served without looking at its path
  /// again. The first request after that checks the path (statx(2) through the loop)
  /// and, if it now names another file or the file's size or modification time
  /// changed, opens it afresh. So a response never comes from a file that its path
  /// stopped naming (a file replaced by rename, or deleted) more than this long before
  /// the request arrived. 0: the path is checked on every request.
  std::chrono::milliseconds open_file_cache_valid_for{1000};
};

/// A handler serving the files under a directory (for a router prefix route): GET
/// and HEAD, index files, ETag and Last-Modified validators (304, 412), byte ranges
/// (206, multipart/byteranges), and no path outside the root.
class static_files {
 public:
  /// Serves `root`. Throws std::system_error if it is not an accessible directory,
  /// std::invalid_argument if opts.index is not a plain file name.
  explicit static_files(const std::string& root, static_files_options opts = {});

  /// Serves request::route_rest() when routed by prefix, else the request's path.
  task<response> operator()(request& r) const;

 private:
  std::shared_ptr<const detail::static_root> root_;
};

}  // namespace ringio::http
