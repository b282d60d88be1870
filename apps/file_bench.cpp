// SPDX-License-Identifier: Apache-2.0
// file_bench — random block reads of one file at a fixed queue depth, on one thread:
// `depth` tasks each read one block at a uniformly random block-aligned offset, then the
// next, for --seconds. The same load as `fio --rw=randread --iodepth=depth` with one
// job. Prints one `RESULT {json}` line: reads done, seconds, IOPS.
#include <fcntl.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "ringio/ringio.hpp"

namespace {

const std::string usage =
    "usage: file_bench --file PATH [--depth N] [--block BYTES] [--seconds S] [--direct] [--fixed]\n"
    "                  [--backend uring|epoll|uring-poll]\n"
    "  random reads of --block bytes (default 4096) at block-aligned offsets of PATH with\n"
    "  --depth reads in flight (default 1) for --seconds (default 5); --direct opens with\n"
    "  O_DIRECT; --fixed reads into buffers registered with the ring (READ_FIXED)\n";

struct load {
  ringio::file* f = nullptr;
  std::uint64_t blocks = 0;
  std::size_t block = 4096;
  bool fixed = false;
  std::chrono::steady_clock::time_point end;
  std::uint64_t reads = 0;
  int errors = 0;
};

ringio::task<void> reader(load& l, std::byte* buf, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uint32_t n = 0;
  for (;;) {
    // Checking the clock every 64 reads keeps it off the per-read cost.
    if ((++n & 63) == 0 && std::chrono::steady_clock::now() >= l.end) co_return;
    const std::uint64_t off = (rng() % l.blocks) * l.block;
    auto r = l.fixed ? co_await l.f->read_fixed_at(ringio::mutable_buffer(buf, l.block), off, 0)
                     : co_await l.f->read_at(ringio::mutable_buffer(buf, l.block), off);
    if (!r || *r != l.block) {
      if (++l.errors == 1)
        std::fprintf(stderr, "file_bench: read at %llu: %s\n", static_cast<unsigned long long>(off),
                     r ? "short read" : r.error().message().c_str());
      co_return;
    }
    ++l.reads;
  }
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"direct", "fixed"});
  const std::string path = args.text("file", "");
  const auto depth = static_cast<std::size_t>(args.integer("depth", 1, 1, 4096));
  const auto block = static_cast<std::size_t>(args.integer("block", 4096, 512, 1 << 20));
  const double seconds = args.seconds("seconds", 5, 0.1, 3600);
  const bool direct = args.flag("direct");
  const bool fixed = args.flag("fixed");
  auto backend = args.backend();
  args.done();
  if (path.empty()) args.fail("--file is required");

  ringio::io_context_options opts;
  if (backend) opts.backend = *backend;
  ringio::io_context ctx(opts);
  auto f = ringio::file::open(path, direct ? O_RDONLY | O_DIRECT : O_RDONLY);
  if (!f) {
    std::fprintf(stderr, "file_bench: %s: %s\n", path.c_str(), f.error().message().c_str());
    return 1;
  }
  const std::uint64_t size = f->size().value_or(0);
  if (size < block) {
    std::fprintf(stderr, "file_bench: %s is smaller than one block\n", path.c_str());
    return 1;
  }
  ringio::aligned_buffer mem(depth * block, ringio::aligned_buffer::direct_io_alignment(*f));
  if (fixed) {
    iovec whole{mem.data(), mem.size()};
    if (int r = ctx.register_buffers(&whole, 1); r < 0) {
      std::fprintf(stderr, "file_bench: registering buffers: %s\n", std::strerror(-r));
      return 1;
    }
  }
  load l;
  l.f = &*f;
  l.blocks = size / block;
  l.block = block;
  l.fixed = fixed;
  const auto start = std::chrono::steady_clock::now();
  l.end =
      start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  ringio::sync_wait(ctx, [](load& l, ringio::aligned_buffer& mem, std::size_t depth) -> ringio::task<void> {
    ringio::scope s;
    for (std::size_t i = 0; i < depth; ++i) s.spawn(reader(l, mem.data() + i * l.block, 1 + i));
    co_await s.join();
  }(l, mem, depth));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "RESULT {\"subject\": \"ringio\", \"backend\": \"%s\", \"depth\": %zu, \"block\": %zu, \"direct\": %s, "
      "\"fixed\": %s, \"reads\": %llu, \"seconds\": %.6f, \"iops\": %.1f, \"errors\": %d}\n",
      std::string(ringio::to_string(ctx.backend())).c_str(), depth, block, direct ? "true" : "false",
      fixed ? "true" : "false", static_cast<unsigned long long>(l.reads), took, static_cast<double>(l.reads) / took,
      l.errors);
  return l.errors == 0 ? 0 : 1;
}
