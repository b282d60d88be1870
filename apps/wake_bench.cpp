// SPDX-License-Identifier: Apache-2.0
// wake_bench — the cost of waking a loop that sleeps in the kernel from another thread:
// two io_uring loops on two threads pass a turn back and forth --rounds times, each
// waking the other, by one of the ways below. Prints one `RESULT {json}` line per way
// with the time and the CPU time (both threads) per round trip, the median of --repeats.
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.hpp"
#include "ringio/any_opcode.hpp"
#include "ringio/io_context.hpp"
#include "ringio/sync/event.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/task.hpp"

namespace {

const std::string usage =
    "usage: wake_bench [--rounds N] [--repeats R] [--only WAY]\n"
    "Two io_uring loops on two threads wake each other N times (default 100,000); time\n"
    "and CPU time per round trip, median of R runs (default 3). Ways:\n"
    "  event    ringio::event set() from the other loop: the loop's inbox and its wake-up\n"
    "           (IORING_OP_MSG_RING between two io_uring loops), what channels and posts use\n"
    "  thread-eventfd, thread-futex  a thread outside ringio and one loop: the thread sets\n"
    "           a ringio::event the loop waits on, the loop answers through an atomic the\n"
    "           thread waits on (std::atomic::wait); the loop is woken through its eventfd\n"
    "           or its FUTEX_WAIT (io_context_options::futex_wake off or on)\n"
    "  eventfd  a read of an eventfd in flight in each ring, woken by write(2) from the\n"
    "           other thread (the wake-up ringio uses from threads outside ringio)\n"
    "  futex    an IORING_OP_FUTEX_WAIT (Linux 6.7) in flight in each ring, woken by\n"
    "           futex(FUTEX_WAKE) from the other thread\n";

constexpr int op_futex_wait = 51;         // IORING_OP_FUTEX_WAIT
constexpr unsigned futex2_size_u32 = 2;   // FUTEX2_SIZE_U32
constexpr unsigned futex2_private = 128;  // FUTEX2_PRIVATE

struct alignas(64) futex_word {
  std::atomic<std::uint32_t> value{0};
};

// One side's way to be woken and to wake the other.
struct wake_pair {
  virtual ~wake_pair() = default;
  virtual void signal(int to) = 0;
  virtual ringio::task<bool> wait(int me) = 0;
};

struct event_pair final : wake_pair {
  ringio::event ev[2] = {ringio::event(ringio::event_mode::auto_reset), ringio::event(ringio::event_mode::auto_reset)};
  void signal(int to) override { ev[to].set(); }
  ringio::task<bool> wait(int me) override { co_return (co_await ev[me].wait()).has_value(); }
};

struct eventfd_pair final : wake_pair {
  int fd[2];
  eventfd_pair() {
    fd[0] = ::eventfd(0, EFD_CLOEXEC);
    fd[1] = ::eventfd(0, EFD_CLOEXEC);
  }
  ~eventfd_pair() override {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  void signal(int to) override {
    const std::uint64_t one = 1;
    (void)!::write(fd[to], &one, sizeof one);
  }
  ringio::task<bool> wait(int me) override {
    std::uint64_t value = 0;
    const int f = fd[me];
    auto prep = [f, &value](io_uring_sqe* sqe) { io_uring_prep_read(sqe, f, &value, sizeof value, 0); };
    auto r = co_await ringio::any_opcode(prep);
    co_return r.has_value();
  }
};

struct futex_pair final : wake_pair {
  futex_word word[2];
  void signal(int to) override {
    word[to].value.store(1, std::memory_order_release);
    ::syscall(SYS_futex, &word[to].value, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }
  ringio::task<bool> wait(int me) override {
    std::atomic<std::uint32_t>& w = word[me].value;
    while (w.exchange(0, std::memory_order_acquire) == 0) {
      auto prep = [&w](io_uring_sqe* sqe) {
        io_uring_prep_rw(op_futex_wait, sqe, static_cast<int>(futex2_size_u32 | futex2_private), &w, 0, 0);
        sqe->addr3 = FUTEX_BITSET_MATCH_ANY;  // the value to wait on (0) is sqe->off
      };
      auto r = co_await ringio::any_opcode(prep);
      if (!r && r.error() != std::errc::resource_unavailable_try_again) co_return false;
    }
    co_return true;
  }
};

ringio::task<void> side(wake_pair& p, int me, std::int64_t rounds, std::atomic<bool>& failed) {
  for (std::int64_t i = 0; i < rounds; ++i) {
    if (me == 0) p.signal(1);
    if (!co_await p.wait(me)) {
      failed = true;
      co_return;
    }
    if (me == 1) p.signal(0);
  }
}

// A thread outside ringio and a loop: the thread sets `ev`, the loop answers on `reply`.
ringio::task<void> answer(ringio::event& ev, std::atomic<std::uint32_t>& reply, std::int64_t rounds) {
  for (std::int64_t i = 0; i < rounds; ++i) {
    if (!co_await ev.wait()) co_return;
    reply.store(1, std::memory_order_release);
    reply.notify_one();
  }
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct run_result {
  double ns;
  double cpu_ns;
};

run_result run_once(wake_pair& p, std::int64_t rounds) {
  ringio::io_context_options opts{.backend = ringio::backend_kind::uring, .quiet = true};
  opts.futex_wake = false;  // loop to loop: ring messages either way
  ringio::io_context a(opts), b(opts);
  std::atomic<bool> failed{false};
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::thread tb([&] { ringio::sync_wait(b, side(p, 1, rounds, failed)); });
  std::thread ta([&] { ringio::sync_wait(a, side(p, 0, rounds, failed)); });
  ta.join();
  tb.join();
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  if (failed) {
    std::fprintf(stderr, "wake_bench: a wait failed\n");
    std::exit(1);
  }
  return {ns / static_cast<double>(rounds), (cpu_seconds() - cpu0) * 1e9 / static_cast<double>(rounds)};
}

run_result run_thread(bool futex_wake, std::int64_t rounds) {
  ringio::io_context_options opts{.backend = ringio::backend_kind::uring, .quiet = true};
  opts.futex_wake = futex_wake;
  ringio::io_context loop(opts);
  ringio::event ev(ringio::event_mode::auto_reset);
  std::atomic<std::uint32_t> reply{0};
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] { ringio::sync_wait(loop, answer(ev, reply, rounds)); });
  for (std::int64_t i = 0; i < rounds; ++i) {
    ev.set();
    reply.wait(0, std::memory_order_acquire);
    reply.store(0, std::memory_order_relaxed);
  }
  t.join();
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return {ns / static_cast<double>(rounds), (cpu_seconds() - cpu0) * 1e9 / static_cast<double>(rounds)};
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage);
  const std::int64_t rounds = args.integer("rounds", 100'000, 1, 1'000'000'000);
  const auto repeats = static_cast<int>(args.integer("repeats", 3, 1, 1000));
  const std::string only = args.text("only", "");
  args.done();
  const std::vector<std::string> ways = {"event", "thread-eventfd", "thread-futex", "eventfd", "futex"};
  if (!only.empty() && std::find(ways.begin(), ways.end(), only) == ways.end())
    args.fail("--only: unknown way '" + only + "'");
  for (const std::string& way : ways) {
    if (!only.empty() && only != way) continue;
    std::vector<run_result> runs;
    for (int r = 0; r < repeats; ++r) {
      if (way.starts_with("thread-")) {
        runs.push_back(run_thread(way == "thread-futex", rounds));
        continue;
      }
      event_pair ev;
      eventfd_pair efd;
      futex_pair fx;
      wake_pair& p = std::string(way) == "event"     ? static_cast<wake_pair&>(ev)
                     : std::string(way) == "eventfd" ? static_cast<wake_pair&>(efd)
                                                     : static_cast<wake_pair&>(fx);
      runs.push_back(run_once(p, rounds));
    }
    std::sort(runs.begin(), runs.end(), [](auto& x, auto& y) { return x.ns < y.ns; });
    const run_result& median = runs[runs.size() / 2];
    std::printf(
        "RESULT {\"tool\":\"wake_bench\",\"way\":\"%s\",\"rounds\":%lld,\"repeats\":%d,"
        "\"ns_per_round_trip\":%.0f,\"min_ns\":%.0f,\"max_ns\":%.0f,\"cpu_ns_per_round_trip\":%.0f}\n",
        way.c_str(), static_cast<long long>(rounds), repeats, median.ns, runs.front().ns, runs.back().ns,
        median.cpu_ns);
  }
  return 0;
}
