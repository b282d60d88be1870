// SPDX-License-Identifier: Apache-2.0
// Whole-file helpers built from the single operations: read a file into a string with
// a bound, write a buffer completely (looping on short writes).
#include <cerrno>
#include <cstdint>
#include <string>

#include "ringio/fs/operations.hpp"

namespace ringio::fs {

task<result<std::string>> read_file(std::string path, std::size_t max_bytes) {
  auto f = co_await open(std::move(path), O_RDONLY);
  if (!f) co_return unexpected(f.error());
  auto st = co_await f->stat(STATX_SIZE);
  if (!st) co_return unexpected(st.error());
  std::string out;
  // The size is only a hint: the file may grow or shrink while it is read, /proc
  // reports 0 and sysfs a page; the bound applies to what is read.
  // One byte past the bound tells a file that exceeds it (no overflow for SIZE_MAX).
  const std::size_t limit = max_bytes == SIZE_MAX ? SIZE_MAX : max_bytes + 1;
  const std::uint64_t hint = st->stx_size == 0 ? 4096 : st->stx_size + 1;
  out.resize(static_cast<std::size_t>(hint < limit ? hint : limit));
  std::size_t have = 0;
  for (;;) {
    if (have == out.size()) {
      if (out.size() > max_bytes) co_return unexpected(errno_code(-EFBIG));
      out.resize(out.size() < limit / 2 ? (out.size() == 0 ? 4096 : out.size() * 2) : limit);
    }
    auto r = co_await f->read_at(mutable_buffer(out.data() + have, out.size() - have), have);
    if (!r) co_return unexpected(r.error());
    if (*r == 0) break;
    have += *r;
  }
  if (have > max_bytes) co_return unexpected(errno_code(-EFBIG));
  out.resize(have);
  co_return out;
}

task<result<std::size_t>> write_all_at(file& f, const_buffer data, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < data.size()) {
    auto w = co_await f.write_at(data.skip(done), offset + done);
    if (!w) {
      if (done != 0) break;  // report what moved, as write(2) does
      co_return unexpected(w.error());
    }
    if (*w == 0) break;  // no progress (a full device reports ENOSPC on the next try)
    done += *w;
  }
  co_return done;
}

task<result<void>> write_file(std::string path, const_buffer data, int flags, unsigned mode) {
  auto f = co_await open(std::move(path), flags, mode);
  if (!f) co_return unexpected(f.error());
  std::size_t done = 0;
  while (done < data.size()) {
    auto w = co_await f->write_at(data.skip(done), done);
    if (!w) co_return unexpected(w.error());  // the file closes itself
    if (*w == 0) co_return unexpected(errno_code(-EIO));
    done += *w;
  }
  auto c = co_await f->close();
  if (!c) co_return unexpected(c.error());
  co_return result<void>{};
}

}  // namespace ringio::fs
