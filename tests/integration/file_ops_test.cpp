// SPDX-License-Identifier: Apache-2.0
// File and directory operations on every backend: success and error paths, stops
// before the start and in flight, O_DIRECT, fixed buffers, whole-file helpers, and a
// seeded random run checked against a model of the file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// A fresh directory per test, removed with everything in it afterwards.
class FileOps : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->name());
    for (char& c : name)
      if (c == '/') c = '_';
    dir_ = ::testing::TempDir() + "ringio-fileops-" + std::to_string(::getpid()) + "-" + name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    backend_test::TearDown();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string at(const std::string& name) const { return dir_ + "/" + name; }
  bool completion_backend() const { return GetParam() == backend_kind::uring; }

  std::string dir_;
};

std::string slurp(const std::string& path) {
  std::string s;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "<missing>";
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return s;
}

TEST_P(FileOps, OpenCreatesAndReportsErrors) {
  std::string p = at("a");
  run([](std::string p, std::string dir) -> task<void> {
    auto missing = co_await fs::open(p);
    EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);
    auto created = co_await fs::open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    EXPECT_TRUE(created) << created.error().message();
    auto again = co_await fs::open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    EXPECT_EQ(again.error(), std::errc::file_exists);
    auto dir_for_writing = co_await fs::open(dir, O_WRONLY);
    EXPECT_EQ(dir_for_writing.error(), std::errc::is_a_directory);
    auto bad_resolve = co_await fs::open(p, O_RDONLY, 0, std::uint64_t{1} << 40);
    EXPECT_EQ(bad_resolve.error(), std::errc::invalid_argument);
    auto escapes = co_await fs::open("/etc/passwd", O_RDONLY, 0, RESOLVE_BENEATH);
    EXPECT_EQ(escapes.error(), std::errc::cross_device_link);  // openat2 says EXDEV
    auto w = co_await created->write_at(std::string_view("hello"), 0);
    EXPECT_EQ(w.value_or(0), 5u);
  }(p, dir_));
  EXPECT_EQ(slurp(p), "hello");
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_P(FileOps, StatReportsSizeTypeAndMissing) {
  std::string p = at("s");
  run([](std::string p, std::string dir) -> task<void> {
    auto w = co_await fs::write_file(p, std::string_view("0123456789"));
    EXPECT_TRUE(w) << w.error().message();
    auto st = co_await fs::stat(p);
    EXPECT_TRUE(st);
    if (st) {
      EXPECT_EQ(st->stx_size, 10u);
      EXPECT_TRUE(S_ISREG(st->stx_mode));
    }
    auto d = co_await fs::stat(dir);
    EXPECT_TRUE(d && S_ISDIR(d->stx_mode));
    auto missing = co_await fs::stat(dir + "/nope");
    EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);
    auto f = co_await fs::open(p);
    EXPECT_TRUE(f);
    auto fst = co_await f->stat();
    EXPECT_EQ(fst ? fst->stx_size : 0, 10u);
  }(p, dir_));
}

TEST_P(FileOps, SyncAllocateAndTruncate) {
  std::string p = at("t");
  run([](std::string p) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    auto w = co_await fs::write_all_at(*f, std::string_view("abcdef"), 0);
    EXPECT_EQ(w.value_or(0), 6u);
    EXPECT_TRUE(co_await f->sync());
    EXPECT_TRUE(co_await f->sync_data());
    EXPECT_TRUE(co_await f->allocate(0, 8192));
    EXPECT_EQ(f->size().value_or(0), 8192u);
    EXPECT_TRUE(co_await f->allocate(8192, 4096, FALLOC_FL_KEEP_SIZE));
    EXPECT_EQ(f->size().value_or(0), 8192u);
    EXPECT_TRUE(co_await f->truncate(3));
    EXPECT_EQ(f->size().value_or(0), 3u);
    auto bad_mode = co_await f->allocate(0, 10, 0x7f00);
    EXPECT_FALSE(bad_mode);
    auto ro = co_await fs::open(p, O_RDONLY);
    EXPECT_TRUE(ro);
    auto t = co_await ro->truncate(0);  // not open for writing
    EXPECT_TRUE(!t && (t.error() == std::errc::invalid_argument || t.error() == std::errc::bad_file_descriptor));
  }(p));
  EXPECT_EQ(slurp(p), "abc");
}

TEST_P(FileOps, PathOperations) {
  run([](std::string d) -> task<void> {
    EXPECT_TRUE(co_await fs::make_directory(d + "/sub"));
    auto again = co_await fs::make_directory(d + "/sub");
    EXPECT_EQ(again.error(), std::errc::file_exists);
    EXPECT_TRUE(co_await fs::write_file(d + "/sub/f", std::string_view("x")));
    auto not_empty = co_await fs::remove_directory(d + "/sub");
    EXPECT_EQ(not_empty.error(), std::errc::directory_not_empty);
    auto is_dir = co_await fs::remove(d + "/sub");
    EXPECT_EQ(is_dir.error(), std::errc::is_a_directory);
    EXPECT_TRUE(co_await fs::rename(d + "/sub/f", d + "/g"));
    auto gone = co_await fs::rename(d + "/sub/f", d + "/h");
    EXPECT_EQ(gone.error(), std::errc::no_such_file_or_directory);
    EXPECT_TRUE(co_await fs::link(d + "/g", d + "/g2"));
    auto exists = co_await fs::link(d + "/g", d + "/g2");
    EXPECT_EQ(exists.error(), std::errc::file_exists);
    EXPECT_TRUE(co_await fs::symlink("g", d + "/sym"));
    auto st = co_await fs::stat(d + "/sym", STATX_BASIC_STATS, AT_SYMLINK_NOFOLLOW);
    EXPECT_TRUE(st && S_ISLNK(st->stx_mode));
    auto no_replace = co_await fs::rename(d + "/g2", d + "/g", RENAME_NOREPLACE);
    EXPECT_EQ(no_replace.error(), std::errc::file_exists);
    EXPECT_TRUE(co_await fs::remove(d + "/g2"));
    auto missing = co_await fs::remove(d + "/g2");
    EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);
    EXPECT_TRUE(co_await fs::remove_directory(d + "/sub"));
  }(dir_));
  char target[16] = {};
  EXPECT_EQ(::readlink(at("sym").c_str(), target, sizeof target - 1), 1);
  EXPECT_STREQ(target, "g");
  EXPECT_EQ(slurp(at("g")), "x");
  EXPECT_FALSE(std::filesystem::exists(at("sub")));
}

TEST_P(FileOps, VectoredReadAndWriteAtOffsets) {
  std::string p = at("v");
  auto got = run([](std::string p) -> task<std::string> {
    auto f = co_await fs::open(p, O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    char a[] = "head-", b[] = "tail";
    iovec out[2] = {{a, 5}, {b, 4}};
    auto w = co_await f->write_at(std::span<const iovec>(out), 3);
    EXPECT_EQ(w.value_or(0), 9u);
    char x[4] = {}, y[8] = {};
    iovec in[2] = {{x, 4}, {y, 8}};
    auto r = co_await f->read_at(std::span<const iovec>(in), 0);
    EXPECT_EQ(r.value_or(0), 12u);  // three zero bytes, then 9 written
    co_return std::string(x + 3, 1) + std::string(y, 8);
  }(p));
  EXPECT_EQ(got, "head-tail");
}

TEST_P(FileOps, WholeFileHelpers) {
  std::string p = at("w");
  auto data = random_bytes(300000, 11);
  run([](std::string p, const std::vector<std::byte>& data) -> task<void> {
    auto w = co_await fs::write_file(p, data);
    EXPECT_TRUE(w) << w.error().message();
    auto r = co_await fs::read_file(p);
    EXPECT_TRUE(r);
    EXPECT_EQ(r ? r->size() : 0, data.size());
    EXPECT_TRUE(r && std::memcmp(r->data(), data.data(), data.size()) == 0);
    auto bounded = co_await fs::read_file(p, 1000);
    EXPECT_EQ(bounded.error(), std::errc::file_too_large);
    auto exact = co_await fs::read_file(p, data.size());
    EXPECT_TRUE(exact);
    auto missing = co_await fs::read_file(p + ".missing");
    EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);
    auto proc = co_await fs::read_file("/proc/self/status", 1 << 20);  // stat says 0 bytes
    EXPECT_TRUE(proc && proc->find("Name:") != std::string::npos);
  }(p, data));
}

TEST_P(FileOps, StopBeforeStartDoesNothing) {
  std::string p = at("never");
  auto errs = run([](std::string p) -> task<std::vector<std::error_code>> {
    std::stop_source src;
    src.request_stop();
    std::vector<std::error_code> out;
    auto o = co_await fs::open(p, O_WRONLY | O_CREAT, 0600).with_stop(src.get_token());
    out.push_back(o ? std::error_code() : o.error());
    auto m = co_await fs::make_directory(p + ".d").with_stop(src.get_token());
    out.push_back(m ? std::error_code() : m.error());
    auto f = co_await fs::open("/proc/self/status");
    EXPECT_TRUE(f);
    auto s = co_await f->sync().with_stop(src.get_token());
    out.push_back(s ? std::error_code() : s.error());
    co_return out;
  }(p));
  for (auto e : errs) EXPECT_EQ(e, std::errc::operation_canceled);
  EXPECT_FALSE(std::filesystem::exists(p));
  EXPECT_FALSE(std::filesystem::exists(p + ".d"));
}

// Opening a FIFO for reading blocks until a writer comes: on io_uring the open waits in
// the kernel, in flight, where a stop or a deadline must reach it. (O_TRUNC, which a
// FIFO ignores, sends the open straight to an io_uring worker; without it the kernel
// first tries a non-blocking open, which a FIFO grants at once.)
TEST_P(FileOps, StopReachesAnOpenInFlight) {
  if (!completion_backend())
    GTEST_SKIP() << "only io_uring interrupts a running open: the pool lets it finish (file_pool_tests), sim runs it "
                    "on the loop";
  std::string p = at("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  // Safety net: should a cancel not reach the open, a writer ends it after 20 s.
  std::atomic<bool> finished{false};
  std::thread rescuer([&] {
    for (int i = 0; i < 200 && !finished; ++i) std::this_thread::sleep_for(100ms);
    if (!finished) {
      int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
  });
  auto [stopped, timed] = run([](std::string p) -> task<std::pair<std::error_code, std::error_code>> {
    std::stop_source src;
    auto stopper = [](std::stop_source& src) -> task<void> {
      (void)co_await sleep_for(20ms);
      src.request_stop();
    };
    // with_timeout(task): its deadline stops the task, whose stop cancels the open.
    // (with_timeout(op) links an IORING_OP_LINK_TIMEOUT, whose cancel does not find an
    // open blocked in a worker on Linux 6.18: docs/files.md.)
    auto t = co_await with_timeout(
        [](std::string p) -> task<result<file>> { co_return co_await fs::open(p, O_RDONLY | O_TRUNC); }(p), 20ms);
    auto [o, unused] = co_await when_all(fs::open(p, O_RDONLY | O_TRUNC).with_stop(src.get_token()), stopper(src));
    co_return std::pair{o ? std::error_code() : o.error(), t ? std::error_code() : t.error()};
  }(p));
  finished = true;
  rescuer.join();
  EXPECT_EQ(stopped, std::errc::operation_canceled);
  EXPECT_EQ(timed, std::errc::timed_out);
}

TEST_P(FileOps, DirectIoWithAlignedAndMisalignedBuffers) {
  std::string p = at("direct");
  int probe = ::open(p.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (probe < 0) GTEST_SKIP() << "the test directory's filesystem refuses O_DIRECT: " << std::strerror(errno);
  ::close(probe);
  run([](std::string p) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR | O_DIRECT);
    EXPECT_TRUE(f);
    if (!f) co_return;
    const std::size_t align = aligned_buffer::direct_io_alignment(*f);
    EXPECT_GE(align, 1u);
    aligned_buffer out(2 * 4096, align);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(out.data()) % align, 0u);
    for (std::size_t i = 0; i < out.size(); ++i) out.data()[i] = static_cast<std::byte>(i * 7);
    auto w = co_await f->write_at(out.buffer(), 0);
    EXPECT_EQ(w.value_or(0), out.size());
    aligned_buffer in(2 * 4096, align);
    auto r = co_await f->read_at(in.buffer(), 0);
    EXPECT_EQ(r.value_or(0), in.size());
    EXPECT_EQ(std::memcmp(in.data(), out.data(), in.size()), 0);
    // A buffer off the alignment (or a length that is not a block multiple): EINVAL.
    auto bad = co_await f->read_at(in.buffer().skip(1).first(4096), 0);
    EXPECT_EQ(bad.error(), std::errc::invalid_argument);
    auto bad_len = co_await f->write_at(out.buffer().first(100), 0);
    EXPECT_EQ(bad_len.error(), std::errc::invalid_argument);
  }(p));
}

TEST_P(FileOps, FixedBuffersReadAndWrite) {
  std::string p = at("fixed");
  aligned_buffer mem(3 * 4096);
  iovec reg{mem.data(), mem.size()};
  ASSERT_EQ(ctx().register_buffers(&reg, 1), 0);
  run([](std::string p, aligned_buffer& mem) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    std::memcpy(mem.data(), "fixed buffers", 13);
    auto w = co_await f->write_fixed_at(mem.buffer().first(13), 100, 0);
    EXPECT_EQ(w.value_or(0), 13u);
    auto r = co_await f->read_fixed_at(mem.buffer().skip(4096).first(13), 100, 0);
    EXPECT_EQ(r.value_or(0), 13u);
    EXPECT_EQ(std::memcmp(mem.data() + 4096, "fixed buffers", 13), 0);
  }(p, mem));
  ctx().unregister_buffers();
}

// Random writes, truncations, allocations and vectored reads, some stopped before they
// start, checked against a model of the file; at the end the whole file must match.
TEST_P(FileOps, SeededRandomRunMatchesTheModel) {
  const char* env = std::getenv("RINGIO_FILE_SEED");
  const std::uint64_t seed = env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("RINGIO_FILE_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::string p = at("model");
  auto model = run([](std::string p, std::uint64_t seed) -> task<std::vector<char>> {
    std::mt19937_64 rng(seed);
    std::vector<char> model;
    auto f = co_await fs::open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return model;
    std::stop_source stopped;
    stopped.request_stop();
    for (int i = 0; i < 300; ++i) {
      const bool stop = rng() % 5 == 0;
      const auto off = rng() % 20000;
      const auto len = 1 + rng() % 3000;
      switch (rng() % 5) {
        case 0:
        case 1: {
          std::vector<char> data(len);
          for (char& c : data) c = static_cast<char>('a' + rng() % 26);
          auto op = f->write_at(const_buffer(data.data(), data.size()), off);
          if (stop) op.set_stop_token(stopped.get_token());
          auto w = co_await op;
          if (stop) {
            EXPECT_EQ(w.error(), std::errc::operation_canceled);
            break;
          }
          EXPECT_EQ(w.value_or(0), len);
          if (model.size() < off + len) model.resize(off + len, 0);
          std::memcpy(model.data() + off, data.data(), len);
          break;
        }
        case 2: {
          auto op = f->truncate(off);
          if (stop) op.set_stop_token(stopped.get_token());
          auto t = co_await op;
          if (stop) {
            EXPECT_EQ(t.error(), std::errc::operation_canceled);
            break;
          }
          EXPECT_TRUE(t);
          model.resize(off, 0);
          break;
        }
        case 3: {
          auto op = f->allocate(off, len);
          if (stop) op.set_stop_token(stopped.get_token());
          auto a = co_await op;
          if (stop) {
            EXPECT_EQ(a.error(), std::errc::operation_canceled);
            break;
          }
          EXPECT_TRUE(a);
          if (model.size() < off + len) model.resize(off + len, 0);
          break;
        }
        default: {
          std::vector<char> x(len / 2 + 1), y(len);
          iovec v[2] = {{x.data(), x.size()}, {y.data(), y.size()}};
          auto r = co_await f->read_at(std::span<const iovec>(v), off);
          EXPECT_TRUE(r);
          std::vector<char> got(x);
          got.insert(got.end(), y.begin(), y.end());
          const std::size_t want = off >= model.size() ? 0 : std::min(got.size(), model.size() - off);
          EXPECT_EQ(r.value_or(0), want);
          EXPECT_TRUE(want == 0 || std::memcmp(got.data(), model.data() + off, want) == 0) << "at step " << i;
        }
      }
    }
    (void)co_await f->sync();
    co_return model;
  }(p, seed));
  const std::string disk = slurp(p);
  EXPECT_EQ(disk.size(), model.size());
  EXPECT_TRUE(disk == std::string(model.begin(), model.end())) << "seed " << seed;
}

TEST_P(FileOps, ChainWritesThenSyncs) {
  std::string p = at("chain");
  run([](std::string p) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    auto [w, s, r] = co_await chain(f->write_at(std::string_view("linked"), 0), f->sync_data(), fs::rename(p, p + "2"));
    EXPECT_EQ(w.value_or(0), 6u);
    EXPECT_TRUE(s);
    EXPECT_TRUE(r);
  }(p));
  EXPECT_EQ(slurp(p + "2"), "linked");
}

TEST_P(FileOps, ChainFailingFirstLinkCancelsTheRest) {
  std::string p = at("keep");
  run([](std::string d, std::string p) -> task<void> {
    EXPECT_TRUE(co_await fs::write_file(p, std::string_view("0123456789")));
    auto [m, r] = co_await chain(fs::make_directory(d), fs::remove(p));  // d exists
    EXPECT_EQ(m.error(), std::errc::file_exists);
    EXPECT_EQ(r.error(), std::errc::operation_canceled);
    // A short read (end of file) breaks the chain as an error does.
    auto f = co_await fs::open(p);
    EXPECT_TRUE(f);
    std::array<char, 100> buf;
    auto [got, gone] = co_await chain(f->read_at(buf, 0), fs::remove(p));
    EXPECT_EQ(got.value_or(0), 10u);
    EXPECT_EQ(gone.error(), std::errc::operation_canceled);
  }(dir_, p));
  EXPECT_EQ(slurp(p), "0123456789");
}

TEST_P(FileOps, ChainStoppedBeforeStartDoesNothing) {
  std::string p = at("unmade");
  run([](std::string p) -> task<void> {
    std::stop_source src;
    src.request_stop();
    auto [a, b] = co_await chain(fs::make_directory(p).with_stop(src.get_token()),
                                 fs::make_directory(p + "/x").with_stop(src.get_token()));
    EXPECT_EQ(a.error(), std::errc::operation_canceled);
    EXPECT_EQ(b.error(), std::errc::operation_canceled);
  }(p));
  EXPECT_FALSE(std::filesystem::exists(p));
}

// A stop while the first link waits in the kernel (a FIFO open, as above) cancels it
// and every link after it.
TEST_P(FileOps, ChainStoppedInFlightCancelsEveryLink) {
  if (!completion_backend())
    GTEST_SKIP() << "only io_uring interrupts a running open: the pool lets it finish (file_pool_tests), sim runs it "
                    "on the loop";
  std::string p = at("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::atomic<bool> finished{false};
  std::thread rescuer([&] {
    for (int i = 0; i < 200 && !finished; ++i) std::this_thread::sleep_for(100ms);
    if (!finished) {
      int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
  });
  auto [o, m] = run([](std::string p) -> task<std::pair<std::error_code, std::error_code>> {
    std::stop_source src;
    auto stopper = [](std::stop_source& src) -> task<void> {
      (void)co_await sleep_for(30ms);
      src.request_stop();
    };
    auto links = chain(fs::open(p, O_RDONLY | O_TRUNC).with_stop(src.get_token()),
                       fs::make_directory(p + ".d").with_stop(src.get_token()));
    auto [r, unused] = co_await when_all(std::move(links), stopper(src));
    auto& [o, m] = r;
    co_return std::pair{o ? std::error_code() : o.error(), m ? std::error_code() : m.error()};
  }(p));
  finished = true;
  rescuer.join();
  EXPECT_EQ(o, std::errc::operation_canceled);
  EXPECT_EQ(m, std::errc::operation_canceled);
  EXPECT_FALSE(std::filesystem::exists(p + ".d"));
}

// The last link is cancelled before it starts, so the first (a write that fails) waits
// in the submission queue with IOSQE_IO_LINK and no successor: an unrelated operation
// queued right after it must not join the chain (and be cancelled with it).
TEST_P(FileOps, ChainWithAnUnstartedLastLinkLeavesOtherOperationsAlone) {
  std::string p = at("ro");
  run([](std::string d, std::string p) -> task<void> {
    EXPECT_TRUE(co_await fs::write_file(p, std::string_view("x")));
    auto ro = co_await fs::open(p, O_RDONLY);
    EXPECT_TRUE(ro);
    std::stop_source stopped;
    stopped.request_stop();
    auto links = chain(ro->write_at(std::string_view("abc"), 0),
                       fs::make_directory(d + "/never").with_stop(stopped.get_token()));
    auto [c, other] = co_await when_all(std::move(links), fs::make_directory(d + "/other"));
    auto& [w, m] = c;
    EXPECT_EQ(w.error(), std::errc::bad_file_descriptor);
    EXPECT_EQ(m.error(), std::errc::operation_canceled);
    EXPECT_TRUE(other) << other.error().message();
  }(dir_, p));
  EXPECT_TRUE(std::filesystem::exists(at("other")));
  EXPECT_FALSE(std::filesystem::exists(at("never")));
}

// A middle link cancelled before it starts: the links after it are cancelled too, on
// every backend (io_uring must not link the third to the first).
TEST_P(FileOps, ChainWithAnUnstartedMiddleLinkCancelsTheRest) {
  run([](std::string d) -> task<void> {
    std::stop_source stopped;
    stopped.request_stop();
    auto f = co_await fs::open(d + "/f", O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    // Reads and writes before the last link: io_uring links these in the kernel.
    auto [w, m, r] = co_await chain(f->write_at(std::string_view("abc"), 0),
                                    f->write_at(std::string_view("def"), 3).with_stop(stopped.get_token()),
                                    fs::make_directory(d + "/after"));
    EXPECT_EQ(w.value_or(0), 3u);
    EXPECT_EQ(m.error(), std::errc::operation_canceled);
    EXPECT_EQ(r.error(), std::errc::operation_canceled);
  }(dir_));
  EXPECT_EQ(slurp(at("f")), "abc");
  EXPECT_FALSE(std::filesystem::exists(at("after")));
}

RINGIO_ALL_BACKENDS_AND_SIM(FileOps);

}  // namespace
