// SPDX-License-Identifier: Apache-2.0
// io_context_options::no_iowait (IORING_ENTER_NO_IOWAIT, Linux 6.15) on the io_uring
// backends: describe() says whether it is on, and a loop asleep in the kernel with a read
// pending is not counted in /proc/stat's procs_blocked (the tasks in I/O wait) with it,
// while it is without it on kernels that count io_uring waits as I/O wait.
#include <gtest/gtest.h>
#include <liburing.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

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

struct blocked_samples {
  int taken = 0;
  int with_some = 0;  // samples where some task was in I/O wait
};

blocked_samples sample_blocked(int count) {
  blocked_samples s;
  for (int i = 0; i < count; ++i) {
    const int n = procs_blocked();
    if (n < 0) break;
    ++s.taken;
    if (n > 0) ++s.with_some;
    std::this_thread::sleep_for(10ms);
  }
  return s;
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

  // Samples procs_blocked while a loop with `no_iowait = on` sleeps in the kernel with a
  // read pending on a pipe (on its own thread, as an idle server's loop would).
  blocked_samples while_loop_sleeps(bool on, int samples) {
    auto ctx = make(on);
    if (!ctx) return {};
    pipe_fds p;
    std::promise<void> waiting;
    auto started = waiting.get_future();
    std::thread loop([&] {
      sync_wait(*ctx, [](int fd, std::promise<void>& waiting) -> task<void> {
        waiting.set_value();
        auto r = co_await wait_readable(fd);
        EXPECT_TRUE(r) << r.error().message();
      }(p.r, waiting));
    });
    started.wait();
    std::this_thread::sleep_for(100ms);  // into the kernel
    const blocked_samples s = sample_blocked(samples);
    char c = 'x';
    EXPECT_EQ(::write(p.w, &c, 1), 1);
    loop.join();
    ctx.reset();  // destroyed on this thread: nothing left in flight but the wake read
    return s;
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

TEST_P(NoIowait, SleepingLoopIsNotInIoWait) {
  if (!make(true)) GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here";
  if (!kernel_has_no_iowait()) GTEST_SKIP() << "the kernel lacks IORING_FEAT_NO_IOWAIT (Linux 6.15)";
  if (procs_blocked() < 0) GTEST_SKIP() << "/proc/stat has no procs_blocked";
  // Without the flag the sleeping loop itself is in I/O wait: procs_blocked is at least 1
  // at every sample. A kernel that does not count io_uring waits as I/O wait shows
  // nothing to compare; describe() (the test above) is then all there is to check.
  const blocked_samples off = while_loop_sleeps(false, 50);
  if (off.with_some < off.taken * 9 / 10)
    GTEST_SKIP() << "this kernel did not count the loop's sleep as I/O wait even without the flag (" << off.with_some
                 << " of " << off.taken << " samples)";
  // With it, procs_blocked falls to 0 whenever no other process of the machine is in
  // I/O wait. Other processes may keep it above 0 for a while: then a window without
  // our loop must show 0 for the test to fail.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const blocked_samples on = while_loop_sleeps(true, 100);
    if (on.with_some < on.taken) return;  // a 0 seen while our loop slept: it is not in I/O wait
    const blocked_samples none = sample_blocked(100);
    if (none.with_some == none.taken) continue;  // the machine itself is never free of I/O wait
    ADD_FAILURE() << "with no_iowait the loop's sleep counted as I/O wait: procs_blocked > 0 in all " << on.taken
                  << " samples, and in " << none.with_some << " of " << none.taken << " without the loop";
    return;
  }
  GTEST_SKIP() << "other processes kept procs_blocked above 0 throughout: nothing to conclude";
}

INSTANTIATE_TEST_SUITE_P(, NoIowait, ::testing::Values(backend_kind::uring, backend_kind::uring_poll),
                         ringio_test::backend_param_name);

}  // namespace
