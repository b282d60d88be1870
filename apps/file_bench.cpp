// SPDX-License-Identifier: Apache-2.0
// file_bench — block I/O on one file at a fixed queue depth, on one thread: `depth` tasks
// each read (randread) or write (randwrite) one block at a uniformly random block-aligned
// offset, or write the next block of the file in order (write, wrapping at its end),
// then the next, for --seconds. The same load as `fio --rw=randread|randwrite|write
// --iodepth=depth` with one job; --fsync N issues an fsync after every N writes like
// fio's --fsync=N. Prints one `RESULT {json}` line: operations, seconds, IOPS, MB/s.
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
    "usage: file_bench --file PATH [--rw randread|randwrite|write] [--depth N] [--block BYTES]\n"
    "                  [--seconds S] [--fsync N] [--direct] [--fixed] [--no-defer-taskrun] [--pool-threads N]\n"
    "                  [--backend uring|epoll|uring-poll]\n"
    "  --rw: random reads (default), random writes, or sequential writes (wrapping at the\n"
    "  end of PATH) of --block bytes (default 4096) at block-aligned offsets of PATH, with\n"
    "  --depth operations in flight (default 1) for --seconds (default 5); --fsync N: an\n"
    "  fsync after every N writes; --direct opens with O_DIRECT; --fixed uses buffers\n"
    "  registered with the ring (READ_FIXED / WRITE_FIXED); --no-defer-taskrun sets up the\n"
    "  ring without IORING_SETUP_DEFER_TASKRUN (io_context_options::defer_taskrun);\n"
    "  --pool-threads: the blocking pool's threads, where the readiness backends run file\n"
    "  operations (default: blocking_pool_options' default)\n";

enum class pattern { randread, randwrite, seqwrite };

struct load {
  ringio::file* f = nullptr;
  pattern rw = pattern::randread;
  std::uint64_t blocks = 0;
  std::size_t block = 4096;
  bool fixed = false;
  std::uint64_t fsync_every = 0;
  std::chrono::steady_clock::time_point end;
  std::uint64_t next_block = 0;  // seqwrite: the next block to write
  std::uint64_t ops = 0;
  std::uint64_t fsyncs = 0;
  int errors = 0;
};

void report_error(load& l, const char* what, std::uint64_t off, const char* why) {
  if (++l.errors == 1)
    std::fprintf(stderr, "file_bench: %s at %llu: %s\n", what, static_cast<unsigned long long>(off), why);
}

ringio::task<void> worker(load& l, std::byte* buf, unsigned index, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uint32_t n = 0;
  const bool writing = l.rw != pattern::randread;
  for (;;) {
    // Checking the clock every 64 operations keeps it off the per-operation cost.
    if ((++n & 63) == 0 && std::chrono::steady_clock::now() >= l.end) co_return;
    std::uint64_t blk = 0;
    if (l.rw == pattern::seqwrite) {
      blk = l.next_block;
      l.next_block = blk + 1 == l.blocks ? 0 : blk + 1;
    } else {
      blk = rng() % l.blocks;
    }
    const std::uint64_t off = blk * l.block;
    ringio::result<std::size_t> r;
    if (writing) {
      const ringio::const_buffer b(buf, l.block);
      r = l.fixed ? co_await l.f->write_fixed_at(b, off, index) : co_await l.f->write_at(b, off);
    } else {
      const ringio::mutable_buffer b(buf, l.block);
      r = l.fixed ? co_await l.f->read_fixed_at(b, off, index) : co_await l.f->read_at(b, off);
    }
    if (!r || *r != l.block) {
      report_error(l, writing ? "write" : "read", off, r ? "short transfer" : r.error().message().c_str());
      co_return;
    }
    ++l.ops;
    if (l.fsync_every != 0 && l.ops % l.fsync_every == 0) {
      auto s = co_await l.f->sync();
      if (!s) {
        report_error(l, "fsync", off, s.error().message().c_str());
        co_return;
      }
      ++l.fsyncs;
      if (std::chrono::steady_clock::now() >= l.end) co_return;  // an fsync can be long
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"direct", "fixed", "no-defer-taskrun"});
  const std::string path = args.text("file", "");
  const std::string rw_name = args.text("rw", "randread");
  const auto depth = static_cast<std::size_t>(args.integer("depth", 1, 1, 4096));
  const auto block = static_cast<std::size_t>(args.integer("block", 4096, 512, 16 << 20));
  const double seconds = args.seconds("seconds", 5, 0.1, 3600);
  const auto fsync_every = static_cast<std::uint64_t>(args.integer("fsync", 0, 0, 1 << 30));
  const bool direct = args.flag("direct");
  const bool fixed = args.flag("fixed");
  const bool defer_taskrun = !args.flag("no-defer-taskrun");
  const auto pool_threads = static_cast<unsigned>(args.integer("pool-threads", 0, 0, 4096));
  auto backend = args.backend();
  args.done();
  if (path.empty()) args.fail("--file is required");
  pattern rw = pattern::randread;
  if (rw_name == "randwrite") {
    rw = pattern::randwrite;
  } else if (rw_name == "write") {
    rw = pattern::seqwrite;
  } else if (rw_name != "randread") {
    args.fail("--rw must be randread, randwrite or write");
  }
  if (fsync_every != 0 && rw == pattern::randread) args.fail("--fsync needs --rw randwrite or write");

  ringio::io_context_options opts;
  if (backend) opts.backend = *backend;
  opts.defer_taskrun = defer_taskrun;
  if (pool_threads != 0) opts.blocking.threads = pool_threads;
  ringio::io_context ctx(opts);
  const int access = rw == pattern::randread ? O_RDONLY : O_WRONLY;
  auto f = ringio::file::open(path, direct ? access | O_DIRECT : access);
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
  std::memset(mem.data(), 0xa5, mem.size());  // written blocks: real bytes, every page touched
  if (fixed) {
    // One registered buffer per queue slot, as fio's --fixedbufs does.
    std::vector<iovec> slots(depth);
    for (std::size_t i = 0; i < depth; ++i) slots[i] = iovec{mem.data() + i * block, block};
    if (int r = ctx.register_buffers(slots.data(), static_cast<unsigned>(depth)); r < 0) {
      std::fprintf(stderr, "file_bench: registering buffers: %s\n", std::strerror(-r));
      return 1;
    }
  }
  load l;
  l.f = &*f;
  l.rw = rw;
  l.blocks = size / block;
  l.block = block;
  l.fixed = fixed;
  l.fsync_every = fsync_every;
  const auto start = std::chrono::steady_clock::now();
  l.end =
      start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  ringio::sync_wait(ctx, [](load& l, ringio::aligned_buffer& mem, std::size_t depth) -> ringio::task<void> {
    ringio::scope s;
    for (std::size_t i = 0; i < depth; ++i)
      s.spawn(worker(l, mem.data() + i * l.block, static_cast<unsigned>(i), 1 + i));
    co_await s.join();
  }(l, mem, depth));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto ops = static_cast<unsigned long long>(l.ops);
  std::printf(
      "RESULT {\"subject\": \"ringio\", \"backend\": \"%s\", \"rw\": \"%s\", \"depth\": %zu, \"block\": %zu, "
      "\"direct\": %s, \"fixed\": %s, \"ops\": %llu, \"reads\": %llu, \"fsyncs\": %llu, \"seconds\": %.6f, "
      "\"iops\": %.1f, \"mb_per_s\": %.2f, \"errors\": %d}\n",
      std::string(ringio::to_string(ctx.backend())).c_str(), rw_name.c_str(), depth, block, direct ? "true" : "false",
      fixed ? "true" : "false", ops, rw == pattern::randread ? ops : 0ULL, static_cast<unsigned long long>(l.fsyncs),
      took, static_cast<double>(l.ops) / took, static_cast<double>(l.ops) * static_cast<double>(block) / took / 1e6,
      l.errors);
  return l.errors == 0 ? 0 : 1;
}
