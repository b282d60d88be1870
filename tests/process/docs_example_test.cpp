// SPDX-License-Identifier: Apache-2.0
// The examples of docs/process.md, as a reader would copy them, run against real gzip
// and uname.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "ringio/process.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/when_all.hpp"

using namespace ringio;

namespace {

// docs/process.md, first example (returning what it made, to check it).
task<std::string> compress(std::string text) {
  process::spawn_options o;
  o.in = o.out = process::stdio::pipe;
  std::vector<std::string> argv{"gzip", "-c"};
  auto gz = process::spawn(argv, o);
  if (!gz) co_return "";
  auto feed = [](process::child& c, std::string text) -> task<result<void>> {
    auto w = co_await c.in.write_all(const_buffer(text.data(), text.size()));
    (void)co_await c.in.close();
    co_return w;
  };
  task<result<void>> writing = feed(*gz, std::move(text));
  task<result<std::string>> reading = gz->out.read_to_end(64 << 20);
  auto [written, compressed] = co_await when_all(std::move(writing), std::move(reading));
  auto status = co_await gz->wait();
  if (status && status->success() && compressed && written) co_return *compressed;
  co_return "";
}

TEST(ProcessDocs, CompressThroughGzipAndBack) {
  if (::access("/bin/gzip", X_OK) != 0) GTEST_SKIP() << "no /bin/gzip";
  io_context ctx;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string gz = sync_wait(ctx, compress(text));
  ASSERT_GT(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip's magic
  EXPECT_LT(gz.size(), text.size() / 4);
  auto back = sync_wait(ctx, [](std::string gz) -> task<result<process::output_result>> {
    std::vector<std::string> argv{"gzip", "-dc"};
    co_return co_await process::output(argv, std::move(gz));
  }(gz));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->out, text);
}

TEST(ProcessDocs, OutputOfAProgram) {
  io_context ctx;
  auto r = sync_wait(ctx, []() -> task<result<process::output_result>> {
    std::vector<std::string> argv{"uname", "-s"};  // bound first: GCC 12 (docs/toolchain.md)
    co_return co_await process::output(argv);
  }());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->status.success());
  EXPECT_EQ(r->out, "Linux\n");
}

}  // namespace
