// SPDX-License-Identifier: Apache-2.0
// epoll_wait_bench — waiting on foreign epoll sets from a loop: two tasks play ping-pong
// through two pipes, each pipe's read end in an epoll set of its own, so that every
// wait finds nothing ready and goes through the loop. Prints one `RESULT {json}` line
// per way of waiting, with the time and the CPU time per round trip (the median of
// --repeats runs).
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/epoll_wait.hpp"
#include "ringio/net/wait_ready.hpp"
#include "ringio/scope.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/task.hpp"

namespace {

const std::string usage =
    "usage: epoll_wait_bench [--rounds N] [--repeats R] [--backend B] [--only WAY]\n"
    "Two tasks on one loop pass a byte back and forth N times (default 100,000) through\n"
    "two pipes, each watched by an epoll set of its own; time and CPU time per round\n"
    "trip, median of R runs (default 3). Ways of waiting on an epoll set:\n"
    "  op         ringio::epoll_wait (IORING_OP_EPOLL_WAIT on io_uring with Linux 6.15+;\n"
    "             RINGIO_URING_HIDE_OPCODES=59 makes it wait by readiness instead)\n"
    "  readiness  wait_readable on the epoll descriptor, then epoll_wait(2) with a zero\n"
    "             timeout (what a loop without the operation does)\n";

struct side {
  int ep;
  int in;   // read end watched by ep
  int out;  // write end of the other side's pipe
};

// Takes one event from `s.ep` by the chosen way, or returns false on an error.
ringio::task<bool> take(const side& s, bool op) {
  std::array<epoll_event, 4> ev{};
  for (;;) {
    if (op) {
      auto n = co_await ringio::epoll_wait(s.ep, ev);
      co_return n.has_value();
    }
    auto ready = co_await ringio::wait_readable(s.ep);
    if (!ready) co_return false;
    const int n = ::epoll_wait(s.ep, ev.data(), static_cast<int>(ev.size()), 0);
    if (n > 0) co_return true;
    if (n < 0) co_return false;
  }
}

ringio::task<void> player(side s, std::int64_t rounds, bool op, bool serve_first) {
  char c = 'x';
  if (serve_first && ::write(s.out, &c, 1) != 1) co_return;
  for (std::int64_t i = 0; i < rounds; ++i) {
    if (!co_await take(s, op)) {
      std::fprintf(stderr, "epoll_wait_bench: the wait failed\n");
      co_return;
    }
    if (::read(s.in, &c, 1) != 1) co_return;
    if (serve_first && i + 1 == rounds) break;
    if (::write(s.out, &c, 1) != 1) co_return;
  }
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct run_result {
  double ns_per_round;
  double cpu_ns_per_round;
};

run_result run_once(ringio::io_context& ctx, std::int64_t rounds, bool op) {
  int a[2], b[2];
  if (::pipe2(a, O_NONBLOCK | O_CLOEXEC) != 0 || ::pipe2(b, O_NONBLOCK | O_CLOEXEC) != 0) std::exit(1);
  const int ep_a = ::epoll_create1(EPOLL_CLOEXEC), ep_b = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ::epoll_ctl(ep_a, EPOLL_CTL_ADD, a[0], &ev);
  ::epoll_ctl(ep_b, EPOLL_CTL_ADD, b[0], &ev);
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  ringio::sync_wait(ctx, [](side x, side y, std::int64_t rounds, bool op) -> ringio::task<void> {
    ringio::scope s;
    s.spawn(player(x, rounds, op, false));
    s.spawn(player(y, rounds, op, true));
    co_await s.join();
  }(side{ep_a, a[0], b[1]}, side{ep_b, b[0], a[1]}, rounds, op));
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = (cpu_seconds() - cpu0) * 1e9;
  for (int fd : {ep_a, ep_b}) ringio::forget_descriptor(fd);
  for (int fd : {a[0], a[1], b[0], b[1], ep_a, ep_b}) ::close(fd);
  return {ns / static_cast<double>(rounds), cpu / static_cast<double>(rounds)};
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage);
  const std::int64_t rounds = args.integer("rounds", 100'000, 1, 1'000'000'000);
  const auto repeats = static_cast<int>(args.integer("repeats", 3, 1, 1000));
  const auto backend = args.backend();
  const std::string only = args.text("only", "");
  args.done();
  if (!only.empty() && only != "op" && only != "readiness") args.fail("--only: unknown way '" + only + "'");
  ringio::io_context_options opts = apps::context_options(backend);
  opts.quiet = true;
  ringio::io_context ctx(opts);
  std::printf("epoll_wait_bench: backend %s\n", ctx.describe().c_str());
  for (const char* way : {"op", "readiness"}) {
    if (!only.empty() && only != way) continue;
    const bool op = std::string(way) == "op";
    std::vector<run_result> runs;
    for (int r = 0; r < repeats; ++r) runs.push_back(run_once(ctx, rounds, op));
    std::sort(runs.begin(), runs.end(), [](auto& x, auto& y) { return x.ns_per_round < y.ns_per_round; });
    const run_result& median = runs[runs.size() / 2];
    std::printf(
        "RESULT {\"tool\":\"epoll_wait_bench\",\"way\":\"%s\",\"rounds\":%lld,\"repeats\":%d,"
        "\"ns_per_round_trip\":%.0f,\"min_ns\":%.0f,\"max_ns\":%.0f,\"cpu_ns_per_round_trip\":%.0f}\n",
        way, static_cast<long long>(rounds), repeats, median.ns_per_round, runs.front().ns_per_round,
        runs.back().ns_per_round, median.cpu_ns_per_round);
  }
  return 0;
}
