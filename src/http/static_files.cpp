// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/static_files.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>

#include "byte_range.hpp"
#include "char_class.hpp"
#include "file_path.hpp"
#include "http_date.hpp"
#include "mime_types.hpp"
#include "multipart_ranges.hpp"
#include "preconditions.hpp"
#include "ringio/http/status.hpp"

namespace ringio::http {
namespace detail {

struct static_root {
  ringio::detail::fd_handle fd;
  static_files_options opts;
};

namespace {

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

std::string etag_of(const struct stat& st) {
  char buf[48];
  std::uint64_t ns =
      static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(st.st_mtim.tv_nsec);
  int n = std::snprintf(buf, sizeof buf, "\"%llx-%llx\"", static_cast<unsigned long long>(st.st_size),
                        static_cast<unsigned long long>(ns));
  return std::string(buf, static_cast<std::size_t>(n));
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

response serve(const static_root& root, request& r) {
  if (r.method() != method::get && r.method() != method::head) {
    response res = page(405);
    res.set_header("Allow", "GET, HEAD");
    return res;
  }
  std::string_view encoded = r.prefix_routed() ? r.route_rest() : r.path();
  char rel[PATH_MAX];
  std::size_t len = 0;
  if (int st = decode_relative_path(encoded, rel, sizeof rel - root.opts.index.size() - 2, len)) return page(st);

  int fd = open_beneath(root.fd.get(), rel);
  if (fd < 0) return page(status_for_open_error(fd));
  ringio::detail::fd_handle file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return page(500);
  if (!S_ISDIR(st.st_mode) && names_directory(encoded)) return page(404);  // "a.txt/": a.txt is no directory
  std::string_view name(rel, len);
  if (S_ISDIR(st.st_mode)) {
    if (!r.path().ends_with('/')) {  // relative links in the index resolve against the directory
      response res = page(301);
      std::string_view path = r.path();
      while (path.starts_with("//")) path.remove_prefix(1);  // "//host/x/" would leave the site
      std::string location(path);
      location.append("/");
      if (!r.query().empty()) location.append("?").append(r.query());
      res.set_header("Location", location);
      return res;
    }
    if (len > 0) rel[len++] = '/';
    std::memcpy(rel + len, root.opts.index.c_str(), root.opts.index.size() + 1);
    len += root.opts.index.size();
    name = std::string_view(rel, len);
    fd = open_beneath(root.fd.get(), rel);
    if (fd < 0) return page(fd == -ENOENT ? 404 : status_for_open_error(fd));  // no directory listings
    file = ringio::detail::fd_handle(fd);
    if (::fstat(fd, &st) != 0) return page(500);
  }
  if (!S_ISREG(st.st_mode)) return page(404);
  ::fcntl(fd, F_SETFL, 0);  // back to blocking: io_uring then reads it like any regular file

  std::string etag = etag_of(st);
  char last_modified[http_date_size];
  format_http_date(st.st_mtim.tv_sec, last_modified);
  std::string_view lm(last_modified, http_date_size);
  auto validators = [&](response& res) {
    res.set_header("ETag", etag);
    res.set_header("Last-Modified", lm);
    if (!root.opts.cache_control.empty()) res.set_header("Cache-Control", root.opts.cache_control);
  };

  switch (check_preconditions(r, etag, st.st_mtim.tv_sec)) {
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

  auto size = static_cast<std::uint64_t>(st.st_size);
  byte_range_list ranges;
  std::size_t count = 0;
  byte_range range{0, size == 0 ? 0 : size - 1};
  int status = 200;
  std::string_view range_field = r.header("Range");
  if (!range_field.empty() && if_range_holds(r.header("If-Range"), etag, st.st_mtim.tv_sec)) {
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
  if (count > 1) {  // a single range is never sent as multipart (RFC 9110 14.6)
    response res = multipart_ranges(std::move(file), std::span(ranges.data(), count), size, mime_type_for(name));
    validators(res);
    res.set_header("Accept-Ranges", "bytes");
    return res;
  }
  std::uint64_t length = size == 0 ? 0 : range.last - range.first + 1;
  response res = response::file(status, file_body{std::move(file), range.first, length}, mime_type_for(name));
  validators(res);
  res.set_header("Accept-Ranges", "bytes");
  if (status == 206)
    res.set_header("Content-Range", "bytes " + std::to_string(range.first) + "-" + std::to_string(range.last) + "/" +
                                        std::to_string(size));
  return res;
}

}  // namespace
}  // namespace detail

static_files::static_files(const std::string& root, static_files_options opts) {
  if (opts.index.empty() || opts.index.size() > 255 || opts.index.find('/') != std::string::npos)
    throw std::invalid_argument("http: static files index must be a file name");
  int fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "http: static files root '" + root + "'");
  root_ =
      std::make_shared<const detail::static_root>(detail::static_root{ringio::detail::fd_handle(fd), std::move(opts)});
}

task<response> static_files::operator()(request& r) const { co_return detail::serve(*root_, r); }

}  // namespace ringio::http
