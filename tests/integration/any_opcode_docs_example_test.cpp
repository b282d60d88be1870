// SPDX-License-Identifier: Apache-2.0
// The complete example of docs/any_opcode.md, compiled and run: keep the two the same
// (main() left out).
#include <gtest/gtest.h>

// --- docs/any_opcode.md example begins ---
#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ringio/any_opcode.hpp>
#include <ringio/ringio.hpp>
#include <string>

using namespace std::chrono_literals;

// Moves up to `n` bytes from one pipe to another inside the kernel (IORING_OP_SPLICE,
// which ringio has no wrapper for): the bytes are there, so it does not block.
ringio::task<ringio::result<std::size_t>> splice_pipe(int from, int to, unsigned n) {
  auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_splice(sqe, from, -1, to, -1, n, 0); };
  auto bytes = [](int res) noexcept { return static_cast<std::size_t>(res); };
  co_return co_await ringio::with_timeout(ringio::any_opcode(prep, bytes), 1s);
}

// Writes `text` into one pipe, splices it into another and reads it back.
std::string splice_demo(const std::string& text) {
  int a[2], b[2];
  if (::pipe2(a, O_CLOEXEC) != 0) return "pipe failed";
  if (::pipe2(b, O_CLOEXEC) != 0) return "pipe failed";
  if (::write(a[1], text.data(), text.size()) != static_cast<ssize_t>(text.size())) return "write failed";
  ringio::io_context ctx;  // io_uring; on epoll the splice fails: operation not supported
  auto moved = ringio::sync_wait(ctx, splice_pipe(a[0], b[1], 64));
  std::string out;
  if (moved) {
    out.resize(*moved);
    if (::read(b[0], out.data(), out.size()) != static_cast<ssize_t>(out.size())) out = "read failed";
  } else {
    out = "splice: " + moved.error().message();
  }
  for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
  return out;
}
// --- docs/any_opcode.md example ends ---

TEST(AnyOpcodeDocsExample, SplicesBetweenPipes) {
  const std::string out = splice_demo("hello through the kernel");
  ringio::io_context probe;
  if (probe.backend() != ringio::backend_kind::uring) {
    EXPECT_EQ(out, "splice: " + std::make_error_code(std::errc::operation_not_supported).message());
    GTEST_SKIP() << "io_uring is not available here: the example reports the refusal";
  }
  EXPECT_EQ(out, "hello through the kernel");
}
