// SPDX-License-Identifier: Apache-2.0
// spawn_bench — child process start-up rate on one thread: --concurrency tasks each run
// the program (process::output: spawn with its output piped, read all of it, wait), then
// the next, until --count children have run. `echo` runs `/bin/echo x` and checks that
// it printed "x\n"; `true` runs `/bin/true`. Prints one `RESULT {json}` line: children,
// seconds, spawns per second and this process's own CPU time (not its children's).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "ringio/ringio.hpp"

namespace {

const std::string usage =
    "usage: spawn_bench [--count N] [--concurrency C] [--program echo|true]\n"
    "                   [--backend uring|epoll|uring-poll]\n"
    "  runs --count children (default 1000), --concurrency at a time (default 1), each\n"
    "  `/bin/echo x` (default, its output read and checked) or `/bin/true`\n";

struct load {
  std::vector<std::string> argv;
  std::string expect;
  std::uint64_t remaining = 0;
  std::uint64_t done = 0;
  int errors = 0;
};

ringio::task<void> runner(load& l) {
  while (l.remaining > 0 && l.errors == 0) {
    --l.remaining;
    auto r = co_await ringio::process::output(l.argv);
    if (!r || !r->status.success() || r->out != l.expect) {
      if (++l.errors == 1)
        std::fprintf(stderr, "spawn_bench: %s: %s\n", l.argv[0].c_str(),
                     !r                     ? r.error().message().c_str()
                     : !r->status.success() ? "failed"
                                            : "unexpected output");
      co_return;
    }
    ++l.done;
  }
}

double cpu_seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage);
  const auto count = static_cast<std::uint64_t>(args.integer("count", 1000, 1, 100'000'000));
  const auto concurrency = static_cast<std::size_t>(args.integer("concurrency", 1, 1, 4096));
  const std::string program = args.text("program", "echo");
  auto backend = args.backend();
  args.done();
  load l;
  if (program == "echo") {
    l.argv = {"/bin/echo", "x"};
    l.expect = "x\n";
  } else if (program == "true") {
    l.argv = {"/bin/true"};
  } else {
    args.fail("--program must be echo or true");
  }
  l.remaining = count;

  ringio::io_context_options opts;
  if (backend) opts.backend = *backend;
  ringio::io_context ctx(opts);
  const auto start = std::chrono::steady_clock::now();
  ringio::sync_wait(ctx, [](load& l, std::size_t concurrency) -> ringio::task<void> {
    ringio::scope s;
    for (std::size_t i = 0; i < concurrency; ++i) s.spawn(runner(l));
    co_await s.join();
  }(l, concurrency));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  const double cpu = cpu_seconds(self.ru_utime) + cpu_seconds(self.ru_stime);
  std::printf(
      "RESULT {\"subject\": \"ringio\", \"backend\": \"%s\", \"program\": \"%s\", \"concurrency\": %zu, "
      "\"spawns\": %llu, \"seconds\": %.6f, \"per_s\": %.1f, \"cpu_self_s\": %.6f, \"errors\": %d}\n",
      std::string(ringio::to_string(ctx.backend())).c_str(), program.c_str(), concurrency,
      static_cast<unsigned long long>(l.done), took, static_cast<double>(l.done) / took, cpu, l.errors);
  return l.errors == 0 ? 0 : 1;
}
