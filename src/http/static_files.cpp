// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/static_files.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "byte_range.hpp"
#include "char_class.hpp"
#include "file_path.hpp"
#include "http_date.hpp"
#include "mime_types.hpp"
#include "multipart_ranges.hpp"
#include "open_file_cache.hpp"
#include "preconditions.hpp"
#include "response_parts.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/detail/context_service.hpp"
#include "ringio/detail/file_ops.hpp"
#include "ringio/http/status.hpp"
#include "ringio/io_context.hpp"

namespace ringio::http {
namespace detail {

struct static_root {
  ringio::detail::fd_handle fd;
  static_files_options opts;
  std::uint64_t id = 0;  // tells the roots apart in a loop's caches
};

namespace {

std::atomic<std::uint64_t> next_root_id{1};

// The open-file caches of one loop, one per static_files root it served (a service of
// the loop: every cached descriptor closes when the loop ends).
class static_file_caches : public ringio::detail::context_service {
 public:
  explicit static_file_caches(io_context&) {}

  open_file_cache& of(const static_root& root) {
    if (last_id_ == root.id) return *last_;
    auto it = std::find_if(caches_.begin(), caches_.end(), [&](const auto& c) { return c.first == root.id; });
    if (it == caches_.end()) {
      // Saturated: an interval past what nanoseconds hold (292 years) trusts for ever.
      constexpr auto longest = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds::max());
      const auto max_age =
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::min(root.opts.open_file_cache_valid_for, longest));
      caches_.emplace_back(root.id, std::make_unique<open_file_cache>(capacity_for(root.opts.open_file_cache_entries),
                                                                      std::max<std::int64_t>(0, max_age.count())));
      it = caches_.end() - 1;
    }
    last_id_ = root.id;
    last_ = it->second.get();
    return *last_;
  }

  /// After an insert: the loop's caches together hold at most an eighth of the
  /// descriptors the process may open (each cache alone is capped so, but a loop may
  /// serve many roots): the least recently used file of the fullest other cache goes.
  void keep_within_limit(const open_file_cache& inserted) {
    const std::size_t cap = capacity_for(SIZE_MAX);
    std::size_t total = 0;
    for (auto& c : caches_) total += c.second->size();
    while (total > cap) {
      open_file_cache* fullest = nullptr;
      for (auto& c : caches_) {
        if (c.second.get() != &inserted && (fullest == nullptr || c.second->size() > fullest->size()))
          fullest = c.second.get();
      }
      if (fullest == nullptr || !fullest->evict_oldest()) break;
      --total;
    }
  }

  /// Out of descriptors: closes about half of the files every cache of the loop holds
  /// (all roots' caches, least recently used first in each). False when none held any.
  bool evict_half() {
    bool any = false;
    for (auto& c : caches_) {
      for (std::size_t n = c.second->size() / 2 + 1; n > 0 && c.second->evict_oldest(); --n) any = true;
    }
    return any;
  }

 private:
  // What the options ask for, but at most an eighth of the descriptors the process may open.
  static std::size_t capacity_for(std::size_t entries) noexcept {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
      entries = std::min<std::size_t>(entries, std::max<std::size_t>(1, static_cast<std::size_t>(lim.rlim_cur / 8)));
    return entries;
  }

  std::vector<std::pair<std::uint64_t, std::unique_ptr<open_file_cache>>> caches_;
  std::uint64_t last_id_ = 0;
  open_file_cache* last_ = nullptr;
};

response page(int status) { return response::borrowed(status, reason_phrase(status)); }

int status_for_open_error(int err) noexcept {
  switch (err) {
    case -ENOENT:
    case -ENOTDIR:
      return 404;
    case -EXDEV:  // the path leads out of the root (symlink or absolute link)
    case -ELOOP:
    case -EACCES:
    case -EPERM:
      return 403;
    case -ENAMETOOLONG:
      return 414;
    case -EMFILE:
    case -ENFILE:
      return 503;
    default:
      return 500;
  }
}

// If-Range: the range applies only if the validator still matches, strongly: the
// entity tag, or the modification time given in any HTTP-date form.
bool if_range_holds(std::string_view value, std::string_view etag, std::time_t modified) {
  value = trim_ows(value);
  if (value.empty()) return true;
  if (value.starts_with("W/")) return false;
  if (value.starts_with("\"")) return value == etag;
  auto date = parse_http_date(value);
  return date && *date == modified;
}

// What a response tells of its file.
struct file_view {
  std::uint64_t size = 0;
  std::time_t modified = 0;
  std::string_view etag;
  std::string_view last_modified;
  std::string_view fields;  // the validators and Accept-Ranges, formatted (cached files)
};

// The response for a regular file named `name`, open as `owned` or else as `shared`:
// preconditions, ranges, validators.
response file_response(const static_root& root, request& r, std::string_view name, const file_view& f,
                       ringio::detail::fd_handle owned, ringio::detail::shared_fd shared) {
  auto validators = [&](response& res) {
    res.set_header("ETag", f.etag);
    res.set_header("Last-Modified", f.last_modified);
    if (!root.opts.cache_control.empty()) res.set_header("Cache-Control", root.opts.cache_control);
  };

  switch (check_preconditions(r, f.etag, f.modified)) {
    case 412:
      return page(412);
    case 304: {
      response res(304);
      validators(res);
      return res;
    }
    default:
      break;
  }

  const std::uint64_t size = f.size;
  byte_range_list ranges;
  std::size_t count = 0;
  byte_range range{0, size == 0 ? 0 : size - 1};
  int status = 200;
  std::string_view range_field = r.header("Range");
  if (!range_field.empty() && if_range_holds(r.header("If-Range"), f.etag, f.modified)) {
    switch (parse_range(range_field, size, ranges, count)) {
      case range_kind::satisfiable:
        status = 206;
        range = ranges[0];
        break;
      case range_kind::unsatisfiable: {
        response res = page(416);
        res.set_header("Content-Range", "bytes */" + std::to_string(size));
        return res;
      }
      case range_kind::ignore:
        break;
    }
  }
  if (count > 1) {         // a single range is never sent as multipart (RFC 9110 14.6)
    if (!owned.valid()) {  // the parts are streamed from a descriptor of their own
      int fd = ::fcntl(shared.get(), F_DUPFD_CLOEXEC, 0);
      if (fd < 0) return page(status_for_open_error(-errno));
      owned = ringio::detail::fd_handle(fd);
    }
    response res = multipart_ranges(std::move(owned), std::span(ranges.data(), count), size, mime_type_for(name));
    validators(res);
    res.set_header("Accept-Ranges", "bytes");
    return res;
  }
  std::uint64_t length = size == 0 ? 0 : range.last - range.first + 1;
  const std::string_view type = mime_type_for(name);
  response res = response::file(
      status, file_body{.fd = std::move(owned), .offset = range.first, .length = length, .shared = std::move(shared)},
      f.fields.empty() ? type : std::string_view());
  if (f.fields.empty()) {
    validators(res);
    res.set_header("Accept-Ranges", "bytes");
  } else {  // a cached file's: kept valid by the shared descriptor the body holds
    response_parts::borrow(res, type, f.fields);
  }
  if (status == 206)
    res.set_header("Content-Range", "bytes " + std::to_string(range.first) + "-" + std::to_string(range.last) + "/" +
                                        std::to_string(size));
  return res;
}

response cached_response(const static_root& root, request& r, cached_file& e) {
  if (e.fields.empty()) {  // checked as set_header checks them
    response fields;
    fields.set_header("ETag", e.etag_view());
    fields.set_header("Last-Modified", e.last_modified_view());
    if (!root.opts.cache_control.empty()) fields.set_header("Cache-Control", root.opts.cache_control);
    fields.set_header("Accept-Ranges", "bytes");
    e.fields.assign(fields.extra_headers());
  }
  const file_view f{.size = e.facts.size,
                    .modified = static_cast<std::time_t>(e.facts.mtime_sec),
                    .etag = e.etag_view(),
                    .last_modified = e.last_modified_view(),
                    .fields = e.fields};
  return file_response(root, r, e.key, f, {}, ringio::detail::shared_fd(e));
}

file_facts facts_of(const struct statx& st) noexcept {
  return {.dev = static_cast<std::uint64_t>(makedev(st.stx_dev_major, st.stx_dev_minor)),
          .ino = st.stx_ino,
          .size = st.stx_size,
          .mtime_sec = st.stx_mtime.tv_sec,
          .mtime_nsec = st.stx_mtime.tv_nsec};
}

}  // namespace

// The handler. `rel` holds the path below the root; a path in directory form
// ("sub/", and the root itself) names the directory's index file.
task<response> serve(const static_root& root, request& r) {
  if (r.method() != method::get && r.method() != method::head) {
    response res = page(405);
    res.set_header("Allow", "GET, HEAD");
    co_return res;
  }
  std::string_view encoded = r.prefix_routed() ? r.route_rest() : r.path();
  char rel[PATH_MAX];
  std::size_t len = 0;
  if (int st = decode_relative_path(encoded, rel, sizeof rel - root.opts.index.size() - 2, len)) co_return page(st);
  const bool directory_form = len == 0 || names_directory(encoded);
  const bool index = directory_form && r.path().ends_with('/');
  if (index) {  // the index file: no directory listings
    if (len > 0) rel[len++] = '/';
    std::memcpy(rel + len, root.opts.index.c_str(), root.opts.index.size() + 1);
    len += root.opts.index.size();
  }
  const std::string_view name(rel, len);

  // The open-file cache holds regular files by the name they are served as: an index
  // file, or a path that is not in directory form.
  open_file_cache* cache = nullptr;
  if (root.opts.open_file_cache_entries > 0 && (index || !directory_form)) {
    if (io_context* ctx = io_context::current()) cache = &ctx->service<static_file_caches>().of(root);
  }
  if (cache != nullptr) {
    if (cached_file* e = cache->find(name)) {
      const std::int64_t now = ringio::detail::monotonic_ns();
      if (!cache->expired(*e, now)) co_return cached_response(root, r, *e);
      // Trusted for long enough: does the path still name this file, unchanged?
      ringio::detail::shared_fd hold(*e);  // kept while the loop runs other requests
      ringio::detail::statx_op check(root.fd.get(), std::string(name), 0, STATX_BASIC_STATS);
      auto st = co_await check;
      if (st && S_ISREG(st->stx_mode) && facts_of(*st) == e->facts) {
        e->checked_ns = std::max(e->checked_ns, now);
        co_return cached_response(root, r, *e);
      }
      cache->erase(*e);  // replaced, changed or gone: open the path afresh
    }
  }

  const std::int64_t opened_ns = ringio::detail::monotonic_ns();
  int fd = open_beneath(root.fd.get(), rel);
  if ((fd == -EMFILE || fd == -ENFILE) && io_context::current() != nullptr &&
      io_context::current()->service<static_file_caches>().evict_half()) {
    fd = open_beneath(root.fd.get(), rel);
  }
  if (fd < 0) co_return page(status_for_open_error(fd));
  ringio::detail::fd_handle file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) co_return page(500);
  if (!index) {
    if (!S_ISDIR(st.st_mode) && directory_form) co_return page(404);  // "a.txt/.": a.txt is no directory
    if (S_ISDIR(st.st_mode)) {  // relative links in the index resolve against the directory
      response res = page(301);
      std::string_view path = r.path();
      while (path.starts_with("//")) path.remove_prefix(1);  // "//host/x/" would leave the site
      std::string location(path);
      location.append("/");
      if (!r.query().empty()) location.append("?").append(r.query());
      res.set_header("Location", location);
      co_return res;
    }
  }
  if (!S_ISREG(st.st_mode)) co_return page(404);
  ::fcntl(fd, F_SETFL, 0);  // back to blocking: io_uring then reads it like any regular file

  if (cache != nullptr) {
    cached_file& e = cache->insert(name, file.release(), st, opened_ns);
    io_context::current()->service<static_file_caches>().keep_within_limit(*cache);
    co_return cached_response(root, r, e);
  }
  const file_facts facts = file_facts::of(st);
  char etag[48];
  char last_modified[http_date_size];
  format_http_date(st.st_mtim.tv_sec, last_modified);
  const file_view f{.size = facts.size,
                    .modified = st.st_mtim.tv_sec,
                    .etag = std::string_view(etag, format_etag(facts, etag)),
                    .last_modified = std::string_view(last_modified, http_date_size)};
  co_return file_response(root, r, name, f, std::move(file), {});
}

}  // namespace detail

static_files::static_files(const std::string& root, static_files_options opts) {
  if (opts.index.empty() || opts.index.size() > 255 || opts.index.find('/') != std::string::npos)
    throw std::invalid_argument("http: static files index must be a file name");
  int fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "http: static files root '" + root + "'");
  root_ = std::make_shared<const detail::static_root>(
      detail::static_root{ringio::detail::fd_handle(fd), std::move(opts), detail::next_root_id.fetch_add(1)});
}

task<response> static_files::operator()(request& r) const { return detail::serve(*root_, r); }

}  // namespace ringio::http
