// SPDX-License-Identifier: Apache-2.0
// idle_memory — what an idle loop costs in memory: --loops io_contexts are made and each
// run until idle (its ring enabled, its wake-up read in flight), optionally after a
// burst of --burst sleeps in flight at once (a ring that may grow has then grown).
// Prints one `RESULT {json}` line: resident memory and io_uring mappings per loop,
// measured from /proc/self/status and /proc/self/smaps.
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/task.hpp"
#include "ringio/time/sleep.hpp"

namespace {

const std::string usage =
    "usage: idle_memory [--loops N] [--burst OPS] [--no-resize] [--backend B]\n"
    "Makes N io_contexts (default 16) and runs each until idle; with --burst, each first\n"
    "has OPS sleeps in flight at once. Prints resident memory (VmRSS) and the io_uring\n"
    "mappings (Size and Rss in /proc/self/smaps) per loop. --no-resize: the ring has its\n"
    "full size from the start (io_context_options::ring_resize off).\n";

// VmRSS of this process, KiB.
long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// "7f12a000-7f12b000 rw-s ..." starts a mapping; "Size:   16 kB" and the like follow.
bool is_mapping_header(const std::string& line) {
  const auto space = line.find(' ');
  if (space == std::string::npos || line.find('-') > space) return false;
  for (std::size_t i = 0; i < space; ++i)
    if (line[i] != '-' && std::isxdigit(static_cast<unsigned char>(line[i])) == 0) return false;
  return true;
}

struct mapped {
  long size_kib = 0;
  long rss_kib = 0;
};

// The io_uring mappings of this process (their name in smaps is anon_inode:[io_uring]).
mapped uring_mappings() {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  mapped m;
  bool in_ring = false;
  while (std::getline(in, line)) {
    if (is_mapping_header(line)) {
      in_ring = line.find("io_uring") != std::string::npos;
      continue;
    }
    if (!in_ring) continue;
    if (line.rfind("Size:", 0) == 0) m.size_kib += std::stol(line.substr(5));
    if (line.rfind("Rss:", 0) == 0) m.rss_kib += std::stol(line.substr(4));
  }
  return m;
}

ringio::task<void> burst(int ops) {
  ringio::scope s;
  for (int i = 0; i < ops; ++i)
    s.spawn([]() -> ringio::task<void> { (void)co_await ringio::sleep_for(std::chrono::milliseconds(20)); }());
  co_await s.join();
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"no-resize"});
  const auto loops = static_cast<int>(args.integer("loops", 16, 1, 1024));
  const auto ops = static_cast<int>(args.integer("burst", 0, 0, 1'000'000));
  const bool resize = !args.flag("no-resize");
  auto backend = args.backend();
  args.done();

  const long rss_before = rss_kib();
  const mapped before = uring_mappings();
  std::vector<std::unique_ptr<ringio::io_context>> ctxs;
  for (int i = 0; i < loops; ++i) {
    auto& ctx = *ctxs.emplace_back(std::make_unique<ringio::io_context>(
        ringio::io_context_options{.backend = backend, .ring_resize = resize, .quiet = true}));
    if (ops > 0) ringio::sync_wait(ctx, burst(ops));
    ctx.run_until_idle();
  }
  const long rss_after = rss_kib();
  const mapped after = uring_mappings();
  std::printf(
      "RESULT {\"loops\": %d, \"burst\": %d, \"ring_resize\": %s, \"rss_per_loop_kib\": %.1f, "
      "\"ring_mapped_per_loop_kib\": %.1f, \"ring_rss_per_loop_kib\": %.1f, \"describe\": \"%s\"}\n",
      loops, ops, resize ? "true" : "false", static_cast<double>(rss_after - rss_before) / loops,
      static_cast<double>(after.size_kib - before.size_kib) / loops,
      static_cast<double>(after.rss_kib - before.rss_kib) / loops, ctxs.front()->describe().c_str());
  return 0;
}
