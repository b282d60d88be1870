// SPDX-License-Identifier: Apache-2.0
// ringio/fs/operations.hpp — asynchronous file-system operations on paths: open,
// stat, rename, remove, mkdir, link, symlink, and whole-file reads and writes. On
// io_uring each is its native opcode where the kernel's probe has it; on the readiness
// backends (and where the probe lacks it) the syscall runs on the loop's thread.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ringio/buffer.hpp"
#include "ringio/detail/file_ops.hpp"
#include "ringio/fs/file.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::fs {

/// openat2(2) relative to the working directory (IORING_OP_OPENAT2). `flags`: O_RDONLY,
/// O_WRONLY | O_CREAT | O_EXCL, O_DIRECT, ... (O_CLOEXEC is always added); `mode` for
/// O_CREAT and O_TMPFILE; `resolve`: RESOLVE_* flags of openat2 (RESOLVE_NO_SYMLINKS,
/// RESOLVE_BENEATH, ...). The result is the open file. Errors: what openat2 reports
/// (no_such_file_or_directory, file_exists, is_a_directory, invalid_argument for bad
/// flags); operation_canceled on a stop before the start, or in flight on io_uring (the
/// kernel may still finish the open first: then the file is returned).
[[nodiscard]] inline detail::open_op open(std::string path, int flags = O_RDONLY, unsigned mode = 0644,
                                          std::uint64_t resolve = 0) {
  return {AT_FDCWD, std::move(path), flags, mode, resolve};
}

/// statx(2) of `path` (IORING_OP_STATX). `flags`: AT_SYMLINK_NOFOLLOW, ...; `mask`: the
/// fields wanted (the result's stx_mask says which the filesystem filled).
[[nodiscard]] inline detail::statx_op stat(std::string path, unsigned mask = STATX_BASIC_STATS, int flags = 0) {
  return {AT_FDCWD, std::move(path), flags, mask};
}

/// rename(2) `from` to `to` (IORING_OP_RENAMEAT); `flags`: RENAME_NOREPLACE, ...
[[nodiscard]] inline detail::path_op rename(std::string from, std::string to, unsigned flags = 0) {
  return {&detail::rename_vtable, std::move(from), std::move(to), static_cast<int>(flags), 0};
}

/// unlink(2) of a file (IORING_OP_UNLINKAT). A directory fails with
/// is_a_directory (EISDIR).
[[nodiscard]] inline detail::path_op remove(std::string path) {
  return {&detail::unlink_vtable, std::move(path), std::string(), 0, 0};
}

/// rmdir(2) of an empty directory (IORING_OP_UNLINKAT with AT_REMOVEDIR).
[[nodiscard]] inline detail::path_op remove_directory(std::string path) {
  return {&detail::unlink_vtable, std::move(path), std::string(), AT_REMOVEDIR, 0};
}

/// mkdir(2) (IORING_OP_MKDIRAT); file_exists when the path exists.
[[nodiscard]] inline detail::path_op make_directory(std::string path, unsigned mode = 0755) {
  return {&detail::mkdir_vtable, std::move(path), std::string(), 0, mode};
}

/// link(2): a new name `to` for the file `from` (IORING_OP_LINKAT).
[[nodiscard]] inline detail::path_op link(std::string from, std::string to) {
  return {&detail::link_vtable, std::move(from), std::move(to), 0, 0};
}

/// symlink(2): creates `link_path` pointing at `target` (IORING_OP_SYMLINKAT).
[[nodiscard]] inline detail::path_op symlink(std::string target, std::string link_path) {
  return {&detail::symlink_vtable, std::move(target), std::move(link_path), 0, 0};
}

/// Reads the whole file at `path` into a string, to its end whatever size the file
/// reports (/proc and sysfs files report 0 or a page). More than `max_bytes` of content
/// fails with file_too_large (EFBIG) and nothing is returned. Errors of open and read pass
/// through; a stop cancels it (operation_canceled).
[[nodiscard]] task<result<std::string>> read_file(std::string path, std::size_t max_bytes = std::size_t{1} << 30);

/// Writes all of `data` at `offset` of `f`, looping on short writes. The result is the
/// byte count written: data.size(), or fewer when an error or a stop came after some
/// bytes moved (as write(2) reports); the error itself when nothing moved.
[[nodiscard]] task<result<std::size_t>> write_all_at(file& f, const_buffer data, std::uint64_t offset);

/// Creates or replaces the file at `path` (`flags`, `mode` as open) with `data`, looping
/// on short writes, then closes it. A short write that stopped on an error reports it.
[[nodiscard]] task<result<void>> write_file(std::string path, const_buffer data,
                                            int flags = O_WRONLY | O_CREAT | O_TRUNC, unsigned mode = 0644);

}  // namespace ringio::fs
