// SPDX-License-Identifier: Apache-2.0
// File operations on the blocking pool (epoll, uring-poll): a slow one blocks a pool
// thread, never the loop; a stop reaches only work not yet started, and an operation
// whose syscall runs completes only when it returns; cached reads stay on the loop.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

// A loop on a readiness backend with a pool of `threads`, a fresh directory and a FIFO.
class FilePool : public ::testing::TestWithParam<backend_kind> {
 protected:
  void SetUp() override {
    try {
      ctx_.emplace(io_context_options{.backend = GetParam(), .quiet = true, .blocking = {.threads = 1}});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here: " << e.what();
    }
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name)
      if (c == '/') c = '_';
    dir_ = ::testing::TempDir() + "ringio-filepool-" + std::to_string(::getpid()) + "-" + name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    fifo_ = dir_ + "/fifo";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    // Safety net: should the test not open the FIFO's writer end, this does after 20 s.
    rescuer_ = std::thread([this] {
      for (int i = 0; i < 200 && !finished_; ++i) std::this_thread::sleep_for(100ms);
      while (!finished_) {
        int fd = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) ::close(fd);
        std::this_thread::sleep_for(10ms);
      }
    });
  }
  void TearDown() override {
    finished_ = true;
    if (rescuer_.joinable()) rescuer_.join();
    ctx_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  template <class T>
  T run(task<T> t) {
    return sync_wait(*ctx_, std::move(t));
  }
  io_context& ctx() { return *ctx_; }

  std::optional<io_context> ctx_;
  std::string dir_;
  std::string fifo_;
  std::atomic<bool> finished_{false};
  std::thread rescuer_;
};

// Opens the FIFO's writer end once a reader waits in open(2) (ENXIO before); -1 if
// none came within 10 s.
task<int> open_writer(std::string fifo) {
  for (int i = 0; i < 2000; ++i) {
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) co_return fd;
    (void)co_await sleep_for(5ms);
  }
  co_return -1;
}

TEST_P(FilePool, OpenOfAFifoBlocksAPoolThreadWhileTimersFire) {
  auto [ticks_before, opened] = run([](std::string fifo) -> task<std::pair<int, bool>> {
    bool done = false;
    int ticks = 0;
    auto ticker = [](bool& done, int& ticks, std::string fifo) -> task<int> {
      while (ticks < 10) {  // the open blocks on the pool; the loop keeps firing timers
        (void)co_await sleep_for(2ms);
        if (!done) ++ticks;
      }
      co_return co_await open_writer(fifo);
    };
    auto opener = [](bool& done, std::string fifo) -> task<result<file>> {
      auto f = co_await fs::open(fifo, O_RDONLY);
      done = true;
      co_return f;
    };
    auto [f, w] = co_await when_all(opener(done, fifo), ticker(done, ticks, fifo));
    if (w >= 0) ::close(w);
    co_return std::pair{ticks, f.has_value()};
  }(fifo_));
  EXPECT_EQ(ticks_before, 10);
  EXPECT_TRUE(opened);
}

// A stop while open(2) runs cannot undo it: the operation completes when the syscall
// returns, with its real result (the opened file: nothing leaks).
TEST_P(FilePool, StopWhileTheSyscallRunsWaitsForItsResult) {
  auto [opened, writer_first] = run([](std::string fifo) -> task<std::pair<bool, bool>> {
    std::stop_source src;
    bool writer_open = false;
    auto stopper = [](std::stop_source& src, bool& writer_open, std::string fifo) -> task<int> {
      (void)co_await sleep_for(20ms);
      src.request_stop();
      (void)co_await sleep_for(50ms);
      int w = co_await open_writer(fifo);
      writer_open = true;
      co_return w;
    };
    auto opener = [](std::stop_source& src, bool& writer_open, std::string fifo) -> task<std::pair<bool, bool>> {
      auto f = co_await fs::open(fifo, O_RDONLY).with_stop(src.get_token());
      co_return std::pair{f.has_value(), writer_open};
    };
    auto [r, w] = co_await when_all(opener(src, writer_open, fifo), stopper(src, writer_open, fifo));
    if (w >= 0) ::close(w);
    co_return r;
  }(fifo_));
  EXPECT_TRUE(opened);
  EXPECT_TRUE(writer_first) << "the stopped open completed before its syscall returned";
}

// With the pool's one thread blocked, later operations wait in its queue: a stop or a
// deadline there cancels them, and their syscall never runs.
TEST_P(FilePool, StopOrDeadlineOfAQueuedOperationNeverRunsIt) {
  std::string stopped_dir = dir_ + "/stopped";
  std::string timed_dir = dir_ + "/timed";
  auto [stopped, timed] = run([](std::string fifo, std::string sd,
                                 std::string td) -> task<std::pair<std::error_code, std::error_code>> {
    std::stop_source src;
    auto blocker = [](std::string fifo) -> task<bool> { co_return (co_await fs::open(fifo, O_RDONLY)).has_value(); };
    auto queued = [](std::stop_source& src, std::string sd,
                     std::string td) -> task<std::pair<std::error_code, std::error_code>> {
      (void)co_await sleep_for(20ms);  // the blocker holds the pool's thread by now
      auto stopper = [](std::stop_source& src) -> task<void> {
        (void)co_await sleep_for(20ms);
        src.request_stop();
      };
      auto mk = fs::make_directory(sd).with_stop(src.get_token());
      auto [s, unused] = co_await when_all(std::move(mk), stopper(src));
      auto mk2 = fs::make_directory(td);
      auto t = co_await with_timeout(std::move(mk2), 20ms);
      co_return std::pair{s ? std::error_code() : s.error(), t ? std::error_code() : t.error()};
    };
    auto releaser = [](std::string fifo) -> task<int> {
      (void)co_await sleep_for(150ms);
      co_return co_await open_writer(fifo);
    };
    auto [b, r, w] = co_await when_all(blocker(fifo), queued(src, sd, td), releaser(fifo));
    if (w >= 0) ::close(w);
    EXPECT_TRUE(b);
    co_return r;
  }(fifo_, stopped_dir, timed_dir));
  EXPECT_EQ(stopped, std::errc::operation_canceled);
  EXPECT_EQ(timed, std::errc::timed_out);
  EXPECT_FALSE(std::filesystem::exists(stopped_dir));
  EXPECT_FALSE(std::filesystem::exists(timed_dir));
}

// A buffered read the page cache holds is made on the loop (RWF_NOWAIT): no pool thread.
TEST_P(FilePool, CachedReadStaysOnTheLoop) {
  std::string p = dir_ + "/cached";
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "cached bytes", 12, 0), 12);
  ::close(fd);
  std::string got = run([](std::string p) -> task<std::string> {
    auto f = file::open(p, O_RDONLY);
    if (!f) co_return "<open failed>";
    char buf[32] = {};
    auto n = co_await f->read_at(mutable_buffer(buf, sizeof buf), 0);
    co_return n ? std::string(buf, *n) : "<read failed>";
  }(p));
  EXPECT_EQ(got, "cached bytes");
  EXPECT_EQ(blocking_pool::default_of(ctx()).threads(), 0u) << "a cached read went to the pool";
}

INSTANTIATE_TEST_SUITE_P(, FilePool, ::testing::Values(backend_kind::epoll, backend_kind::uring_poll),
                         ringio_test::backend_param_name);

}  // namespace
