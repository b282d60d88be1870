// SPDX-License-Identifier: Apache-2.0
// io_context_options::no_iowait (IORING_ENTER_NO_IOWAIT, Linux 6.15) on the io_uring
// backends: describe() says whether it is on, and a loop asleep in the kernel with a read
// pending is not counted in /proc/stat's procs_blocked (the tasks in I/O wait) with it,
// while it is without it on kernels that count io_uring waits as I/O wait.
#include <gtest/gtest.h>
#include <liburing.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/net/wait_ready.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

constexpr unsigned feat_no_iowait = 1U << 17;  // IORING_FEAT_NO_IOWAIT

// Whether a ring set up here reports IORING_FEAT_NO_IOWAIT.
bool kernel_has_no_iowait() {
  io_uring ring;
  io_uring_params p{};
  if (io_uring_queue_init_params(2, &ring, &p) < 0) return false;
  io_uring_queue_exit(&ring);
  return (p.features & feat_no_iowait) != 0;
}

// /proc/stat's procs_blocked: tasks of the whole machine in I/O wait right now.
int procs_blocked() {
  std::ifstream in("/proc/stat");
  std::string key;
  long long value = 0;
  while (in >> key) {
    if (key == "procs_blocked" && in >> value) return static_cast<int>(value);
    in.ignore(1 << 16, '\n');
  }
  return -1;
}

// The mean of procs_blocked over `count` samples 10 ms apart.
double mean_blocked(int count) {
  long long sum = 0;
  for (int i = 0; i < count; ++i) {
    sum += procs_blocked();
    std::this_thread::sleep_for(10ms);
  }
  return static_cast<double>(sum) / count;
}

struct pipe_fds {
  int r = -1, w = -1;
  pipe_fds() {
    int fds[2];
    if (::pipe(fds) == 0) r = fds[0], w = fds[1];
  }
  ~pipe_fds() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
  }
};

class NoIowait : public ::testing::TestWithParam<backend_kind> {
 protected:
  std::optional<io_context> make(bool on) {
    try {
      return std::optional<io_context>(std::in_place,
                                       io_context_options{.backend = GetParam(), .quiet = true, .no_iowait = on});
    } catch (const std::system_error& e) {
      return std::nullopt;
    }
  }

  // The mean of procs_blocked while `loops` loops with `no_iowait = on`, each on a
  // thread of its own as an idle server's would be, sleep in the kernel with a read
  // pending on a pipe.
  double while_loops_sleep(bool on, int loops, int samples) {
    std::vector<std::optional<io_context>> ctx(static_cast<std::size_t>(loops));
    for (auto& c : ctx) c.emplace(io_context_options{.backend = GetParam(), .quiet = true, .no_iowait = on});
    pipe_fds p;
    std::atomic<int> waiting{0};
    std::vector<std::thread> threads;
    for (auto& c : ctx) {
      threads.emplace_back([&c, &p, &waiting] {
        sync_wait(*c, [](int fd, std::atomic<int>& waiting) -> task<void> {
          ++waiting;
          auto r = co_await wait_readable(fd);
          EXPECT_TRUE(r) << r.error().message();
        }(p.r, waiting));
      });
    }
    while (waiting.load() < loops) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);  // into the kernel
    const double mean = mean_blocked(samples);
    char c = 'x';
    EXPECT_EQ(::write(p.w, &c, 1), 1);
    for (auto& t : threads) t.join();
    ctx.clear();  // destroyed on this thread: nothing left in flight but the wake reads
    return mean;
  }
};

TEST_P(NoIowait, DescribeSaysWhetherItIsOn) {
  auto on = make(true);
  if (!on) GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here";
  const std::string expect = kernel_has_no_iowait() ? "no iowait yes" : "no iowait unsupported";
  EXPECT_NE(on->describe().find(expect), std::string::npos) << on->describe();
  auto off = make(false);
  ASSERT_TRUE(off);
  EXPECT_NE(off->describe().find("no iowait off"), std::string::npos) << off->describe();
}

// procs_blocked counts every task of the machine in I/O wait, other processes' loops
// included, so the test compares means over interleaved windows: none of our loops,
// eight loops asleep with the flag, eight without. Without it each loop adds 1 (on
// kernels that count io_uring waits as I/O wait at all); with it none should.
TEST_P(NoIowait, SleepingLoopsAreNotInIoWait) {
  if (GetParam() != backend_kind::uring) GTEST_SKIP() << "measured on the uring backend only (the same wait)";
  if (!make(true)) GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here";
  if (!kernel_has_no_iowait()) GTEST_SKIP() << "the kernel lacks IORING_FEAT_NO_IOWAIT (Linux 6.15)";
  if (procs_blocked() < 0) GTEST_SKIP() << "/proc/stat has no procs_blocked";
  constexpr int loops = 8, samples = 30, rounds = 3;
  double none = 0, on = 0, off = 0;
  for (int r = 0; r < rounds; ++r) {
    none += mean_blocked(samples);
    on += while_loops_sleep(true, loops, samples);
    off += while_loops_sleep(false, loops, samples);
  }
  none /= rounds, on /= rounds, off /= rounds;
  const std::string means = "mean procs_blocked: no loop " + std::to_string(none) + ", " + std::to_string(loops) +
                            " loops with the flag " + std::to_string(on) + ", without " + std::to_string(off);
  // A kernel that does not count the sleep even without the flag leaves nothing to
  // compare; describe() (the test above) is then all there is to check.
  if (off - none < loops / 2.0) GTEST_SKIP() << "no I/O wait to remove on this kernel or machine: " << means;
  // Relative to what the loops add without the flag, so that other work's I/O wait in
  // some windows (it adds to both sides) does not decide it.
  EXPECT_LT(on - none, (off - none) / 2) << means;
  RecordProperty("means", means);
}

// Both io_uring backends wait through the same call; the measuring test runs on one, so
// that two of its instances never run at once (ctest -j) and count each other's loops.
INSTANTIATE_TEST_SUITE_P(, NoIowait, ::testing::Values(backend_kind::uring, backend_kind::uring_poll),
                         ringio_test::backend_param_name);

}  // namespace
