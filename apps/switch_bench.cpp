// SPDX-License-Identifier: Apache-2.0
// switch_bench — the cost of one context switch: two counters that hand control to each
// other until --switches hand-overs have happened, for each way ringio (and the
// primitives under it) can do it. Prints one `RESULT {json}` line per subject, with ns
// per switch: the median of --repeats runs, and the min and max.
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <boost/context/detail/fcontext.hpp>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "ringio/fiber.hpp"
#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/task.hpp"
#include "ringio/yield.hpp"

namespace {

const std::string usage =
    "usage: switch_bench [--switches N] [--repeats R] [--only SUBJECT]\n"
    "Two counters hand control to each other N times (default 10,000,000); ns per switch,\n"
    "median of R runs (default 5). Subjects:\n"
    "  task-direct   two ringio tasks resuming each other by symmetric transfer\n"
    "  task-loop     two ringio tasks alternating with co_await yield() on an io_context\n"
    "  fiber-direct  a ringio fiber suspending on an awaiter that resumes it at once: the\n"
    "                fiber's own switch out and back in, without the loop (2 switches)\n"
    "  fiber-handoff two ringio fibers handing control to each other directly: each\n"
    "                awaits an awaiter that resumes the other's driving task by\n"
    "                symmetric transfer (two stack switches per hand-over), no loop\n"
    "  fiber-loop    two ringio fibers alternating with this_fiber::yield() on an io_context\n"
    "  ucontext      two ucontexts alternating with swapcontext(3)\n"
    "  fcontext      raw Boost.Context jump_fcontext between two stacks (the floor)\n";

using clock_type = std::chrono::steady_clock;

// ---- task-direct ----
struct baton {
  std::coroutine_handle<> side[2];
  std::int64_t remaining;
};

// Parks the awaiting side and resumes the other one (or nothing, before it started).
struct hand_over {
  baton& b;
  int me;
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) const noexcept {
    b.side[me] = h;
    std::coroutine_handle<> other = std::exchange(b.side[1 - me], {});
    return other ? other : std::noop_coroutine();
  }
  void await_resume() const noexcept {}
};

ringio::task<void> direct_counter(baton& b, int me) {
  while (b.remaining > 0) {
    --b.remaining;
    co_await hand_over{b, me};
  }
}

double run_task_direct(std::int64_t n) {
  baton b{{}, n};
  auto a = direct_counter(b, 0);
  auto c = direct_counter(b, 1);
  b.side[1] = c.handle();
  auto start = clock_type::now();
  a.handle().resume();  // returns when one of them has finished
  auto end = clock_type::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(n);
}

// ---- task-loop and fiber-loop ----
ringio::task<void> yielding_counter(std::int64_t& remaining) {
  while (remaining > 0) {
    --remaining;
    co_await ringio::yield();
  }
}

template <class Body>
double run_on_loop(std::int64_t n, Body body) {
  ringio::io_context ctx(ringio::io_context_options{.quiet = true});
  std::int64_t remaining = n;
  auto start = clock_type::now();
  ringio::sync_wait(ctx, body(remaining));
  auto end = clock_type::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(n);
}

ringio::task<void> two_yielding_tasks(std::int64_t& remaining) {
  ringio::scope s;
  s.spawn(yielding_counter(remaining));
  s.spawn(yielding_counter(remaining));
  co_await s.join();
}

ringio::task<void> two_yielding_fibers(std::int64_t& remaining) {
  ringio::scope s;
  for (int i = 0; i < 2; ++i)
    ringio::spawn_fiber(s, [&remaining] {
      while (remaining > 0) {
        --remaining;
        ringio::this_fiber::yield();
      }
    });
  co_await s.join();
}

// ---- fiber-handoff ----
double run_fiber_handoff(std::int64_t n) {
  ringio::io_context ctx(ringio::io_context_options{.quiet = true});
  baton b{{}, n};
  auto start = clock_type::now();
  ringio::sync_wait(ctx, [](baton& b) -> ringio::task<void> {
    ringio::scope s;
    for (int me = 0; me < 2; ++me)
      ringio::spawn_fiber(s, [&b, me] {
        while (b.remaining > 0) {
          --b.remaining;
          ringio::this_fiber::await(hand_over{b, me});
        }
        // The other side is parked in hand_over: let it see the end too.
        if (auto other = std::exchange(b.side[1 - me], {})) ringio::io_context::current()->schedule(other);
      });
    co_await s.join();
  }(b));
  auto end = clock_type::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(n);
}

// ---- fiber-direct ----
struct resume_at_once {
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<>) const noexcept { return false; }
  void await_resume() const noexcept {}
};

double run_fiber_direct(std::int64_t n) {
  ringio::io_context ctx(ringio::io_context_options{.quiet = true});
  double ns = 0;
  ringio::sync_wait(ctx, ringio::fiber([n, &ns] {
                      auto start = clock_type::now();
                      for (std::int64_t i = 0; i < n / 2; ++i) ringio::this_fiber::await(resume_at_once{});
                      auto end = clock_type::now();
                      ns = std::chrono::duration<double, std::nano>(end - start).count() /
                           static_cast<double>(n / 2 * 2);
                    }));
  return ns;
}

// ---- ucontext ----
struct uctx_pair {
  ucontext_t main, other;
  std::int64_t remaining;
};
uctx_pair* uctx_state = nullptr;

void uctx_other() {
  for (;;) {
    --uctx_state->remaining;
    swapcontext(&uctx_state->other, &uctx_state->main);
  }
}

double run_ucontext(std::int64_t n) {
  std::vector<char> stack(64 * 1024);
  uctx_pair p{};
  p.remaining = n;
  uctx_state = &p;
  getcontext(&p.other);
  p.other.uc_stack.ss_sp = stack.data();
  p.other.uc_stack.ss_size = stack.size();
  p.other.uc_link = nullptr;
  makecontext(&p.other, uctx_other, 0);
  auto start = clock_type::now();
  while (p.remaining > 0) {
    --p.remaining;
    swapcontext(&p.main, &p.other);
  }
  auto end = clock_type::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(n);
}

// ---- fcontext ----
namespace bctx = boost::context::detail;

void fctx_other(bctx::transfer_t t) {
  for (;;) t = bctx::jump_fcontext(t.fctx, nullptr);
}

double run_fcontext(std::int64_t n) {
  std::vector<char> stack(64 * 1024);
  bctx::fcontext_t other = bctx::make_fcontext(stack.data() + stack.size(), stack.size(), fctx_other);
  auto start = clock_type::now();
  for (std::int64_t i = 0; i < n / 2; ++i) other = bctx::jump_fcontext(other, nullptr).fctx;
  auto end = clock_type::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(n / 2 * 2);
}

struct subject {
  const char* name;
  const char* path;  // how the switch happens, for the reader of the results
  std::function<double(std::int64_t)> run;
};

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage);
  const std::int64_t switches = args.integer("switches", 10'000'000, 2, 10'000'000'000);
  const auto repeats = static_cast<int>(args.integer("repeats", 5, 1, 1000));
  const std::string only = args.text("only", "");
  args.done();

  const std::vector<subject> subjects = {
      {"task-direct", "symmetric transfer between two suspended tasks", run_task_direct},
      {"task-loop", "co_await yield() through the io_context ready queue",
       [](std::int64_t n) { return run_on_loop(n, two_yielding_tasks); }},
      {"fiber-direct", "fiber -> driving task -> fiber, no loop", run_fiber_direct},
      {"fiber-handoff", "fiber -> its driver -> the other's driver -> fiber, no loop", run_fiber_handoff},
      {"fiber-loop", "this_fiber::yield() through the io_context ready queue",
       [](std::int64_t n) { return run_on_loop(n, two_yielding_fibers); }},
      {"ucontext", "swapcontext(3), a sigprocmask(2) per switch", run_ucontext},
      {"fcontext", "jump_fcontext, the floor", run_fcontext},
  };
  bool any = false;
  for (const subject& s : subjects) {
    if (!only.empty() && only != s.name) continue;
    any = true;
    std::vector<double> ns;
    for (int r = 0; r < repeats; ++r) ns.push_back(s.run(switches));
    std::sort(ns.begin(), ns.end());
    double median = ns.size() % 2 == 1 ? ns[ns.size() / 2] : (ns[ns.size() / 2 - 1] + ns[ns.size() / 2]) / 2;
    std::printf(
        "RESULT {\"bench\":\"switch\",\"subject\":\"%s\",\"path\":\"%s\",\"switches\":%lld,\"repeats\":%d,"
        "\"ns_per_switch\":%.2f,\"min_ns\":%.2f,\"max_ns\":%.2f}\n",
        s.name, s.path, static_cast<long long>(switches), repeats, median, ns.front(), ns.back());
    std::fflush(stdout);
  }
  if (!any) args.fail("--only: unknown subject '" + only + "'");
  return 0;
}
