// SPDX-License-Identifier: Apache-2.0
// File operations, O_DIRECT buffers, registered buffers and ordered chains held to
// their documented promises on every backend: errors, stops and deadlines at each
// point, short and empty transfers, chains breaking at every position, whole-file
// helpers on files whose size lies, and descriptors left open by none of it.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

int open_fd_count() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;  // the directory stream itself
}

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

void put(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ::close(fd);
}

template <class R>
std::error_code err_of(const R& r) {
  return r ? std::error_code() : r.error();
}

class FileAttack : public backend_test {
 protected:
  void SetUp() override {
    fds_before_ = open_fd_count();
    backend_test::SetUp();
    if (IsSkipped()) return;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->name());
    for (char& c : name)
      if (c == '/') c = '_';
    dir_ = ::testing::TempDir() + "ringio-fileattack-" + std::to_string(::getpid()) + "-" + name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    backend_test::TearDown();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      // Every descriptor the test's operations opened is closed again.
      EXPECT_EQ(open_fd_count(), fds_before_) << "descriptors left open";
    }
  }
  std::string at(const std::string& name) const { return dir_ + "/" + name; }
  bool uring() const { return GetParam() == backend_kind::uring; }

  std::string dir_;
  int fds_before_ = 0;
};

// ---------------------------------------------------------------------------------
// Errors

TEST_P(FileAttack, OpenErrorsAreTheSyscallsOnEveryBackend) {
  put(at("file"), "x");
  ASSERT_EQ(::symlink("file", at("link").c_str()), 0);
  ASSERT_EQ(::symlink("loop", at("loop").c_str()), 0);
  ASSERT_EQ(::symlink("../..", at("up").c_str()), 0);
  run([](std::string d) -> task<void> {
    auto enoent = co_await fs::open(d + "/missing");
    EXPECT_EQ(err_of(enoent), std::errc::no_such_file_or_directory);
    auto enotdir = co_await fs::open(d + "/file/inner");
    EXPECT_EQ(err_of(enotdir), std::errc::not_a_directory);
    auto eexist = co_await fs::open(d + "/file", O_WRONLY | O_CREAT | O_EXCL, 0600);
    EXPECT_EQ(err_of(eexist), std::errc::file_exists);
    auto eisdir = co_await fs::open(d, O_RDWR);
    EXPECT_EQ(err_of(eisdir), std::errc::is_a_directory);
    auto eloop_nofollow = co_await fs::open(d + "/link", O_RDONLY | O_NOFOLLOW);
    EXPECT_EQ(err_of(eloop_nofollow), std::errc::too_many_symbolic_link_levels);
    auto eloop_cycle = co_await fs::open(d + "/loop");
    EXPECT_EQ(err_of(eloop_cycle), std::errc::too_many_symbolic_link_levels);
    auto no_symlinks = co_await fs::open(d + "/link", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
    EXPECT_EQ(err_of(no_symlinks), std::errc::too_many_symbolic_link_levels);
    // RESOLVE_BENEATH relative to the working directory: an absolute path or one that
    // climbs out escapes it.
    auto beneath_abs = co_await fs::open("/etc/hostname", O_RDONLY, 0, RESOLVE_BENEATH);
    EXPECT_EQ(err_of(beneath_abs), std::errc::cross_device_link);
    auto beneath_up = co_await fs::open("../../../../../../etc/hostname", O_RDONLY, 0, RESOLVE_BENEATH);
    EXPECT_EQ(err_of(beneath_up), std::errc::cross_device_link);
    auto too_long = co_await fs::open(d + "/" + std::string(NAME_MAX + 1, 'n'));
    EXPECT_EQ(err_of(too_long), std::errc::filename_too_long);
    auto path_too_long = co_await fs::open(std::string(PATH_MAX + 10, 'a'));
    EXPECT_EQ(err_of(path_too_long), std::errc::filename_too_long);
    // Bad flag combinations and unknown resolve bits.
    auto dir_creat = co_await fs::open(d + "/newdir", O_RDONLY | O_CREAT | O_DIRECTORY, 0600);
    EXPECT_EQ(err_of(dir_creat), std::errc::invalid_argument);
    auto tmpfile_ro = co_await fs::open(d, O_TMPFILE | O_RDONLY, 0600);
    EXPECT_EQ(err_of(tmpfile_ro), std::errc::invalid_argument);
    auto bad_resolve = co_await fs::open(d + "/file", O_RDONLY, 0, ~std::uint64_t{0});
    EXPECT_EQ(err_of(bad_resolve), std::errc::invalid_argument);
    auto bad_flags = co_await fs::open(d + "/file", O_RDONLY | (1 << 30));
    EXPECT_EQ(err_of(bad_flags), std::errc::invalid_argument);
    auto empty = co_await fs::open("");
    EXPECT_EQ(err_of(empty), std::errc::no_such_file_or_directory);
  }(dir_));
}

TEST_P(FileAttack, PathOperationErrorsAreTheSyscallsOnEveryBackend) {
  put(at("file"), "x");
  std::filesystem::create_directories(at("full/sub"));
  run([](std::string d) -> task<void> {
    EXPECT_EQ(err_of(co_await fs::make_directory(d + "/file")), std::errc::file_exists);
    EXPECT_EQ(err_of(co_await fs::make_directory(d + "/missing/x")), std::errc::no_such_file_or_directory);
    EXPECT_EQ(err_of(co_await fs::make_directory(d + "/file/x")), std::errc::not_a_directory);
    EXPECT_EQ(err_of(co_await fs::remove(d + "/missing")), std::errc::no_such_file_or_directory);
    EXPECT_EQ(err_of(co_await fs::remove(d + "/full")), std::errc::is_a_directory);
    EXPECT_EQ(err_of(co_await fs::remove_directory(d + "/full")), std::errc::directory_not_empty);
    EXPECT_EQ(err_of(co_await fs::remove_directory(d + "/file")), std::errc::not_a_directory);
    EXPECT_EQ(err_of(co_await fs::rename(d + "/missing", d + "/b")), std::errc::no_such_file_or_directory);
    EXPECT_EQ(err_of(co_await fs::rename(d + "/file", d + "/full/sub", 0)), std::errc::is_a_directory);
    EXPECT_EQ(err_of(co_await fs::rename(d + "/full", d + "/file")), std::errc::not_a_directory);
    EXPECT_EQ(err_of(co_await fs::rename(d + "/file", d + "/full/sub/..", RENAME_NOREPLACE)), std::errc::file_exists);
    // Moving a directory into itself.
    EXPECT_EQ(err_of(co_await fs::rename(d + "/full", d + "/full/sub/in")), std::errc::invalid_argument);
    EXPECT_EQ(err_of(co_await fs::rename(d + "/file", d + "/b", ~0u)), std::errc::invalid_argument);
    EXPECT_EQ(err_of(co_await fs::link(d + "/missing", d + "/l")), std::errc::no_such_file_or_directory);
    EXPECT_EQ(err_of(co_await fs::link(d + "/file", d + "/file")), std::errc::file_exists);
    EXPECT_EQ(err_of(co_await fs::link(d + "/full", d + "/dirlink")), std::errc::operation_not_permitted);
    EXPECT_EQ(err_of(co_await fs::symlink("anything", d + "/file")), std::errc::file_exists);
    EXPECT_EQ(err_of(co_await fs::symlink("", d + "/emptytarget")), std::errc::no_such_file_or_directory);
    std::string long_name = d + "/" + std::string(NAME_MAX + 1, 'x');
    EXPECT_EQ(err_of(co_await fs::make_directory(long_name)), std::errc::filename_too_long);
    EXPECT_EQ(err_of(co_await fs::remove(long_name)), std::errc::filename_too_long);
    auto st = co_await fs::stat(d + "/missing");
    EXPECT_EQ(err_of(st), std::errc::no_such_file_or_directory);
    auto st_long = co_await fs::stat(long_name);
    EXPECT_EQ(err_of(st_long), std::errc::filename_too_long);
    auto st_notdir = co_await fs::stat(d + "/file/x");
    EXPECT_EQ(err_of(st_notdir), std::errc::not_a_directory);
  }(dir_));
  EXPECT_EQ(slurp(at("file")), "x");
  EXPECT_TRUE(std::filesystem::is_directory(at("full/sub")));
}

// rename across file systems: EXDEV when a second file system (/dev/shm) is there.
TEST_P(FileAttack, RenameAcrossFileSystemsIsCrossDeviceLink) {
  struct stat a {
  }, b{};
  if (::stat("/dev/shm", &b) != 0 || ::stat(dir_.c_str(), &a) != 0 || a.st_dev == b.st_dev)
    GTEST_SKIP() << "no second file system at /dev/shm beside the test directory";
  put(at("file"), "x");
  std::string target = "/dev/shm/ringio-fileattack-" + std::to_string(::getpid());
  auto r = run([](std::string from, std::string to) -> task<result<void>> { co_return co_await fs::rename(from, to); }(
                                                        at("file"), target));
  EXPECT_EQ(err_of(r), std::errc::cross_device_link);
  ::unlink(target.c_str());
}

// Operations on a file that holds no descriptor fail with bad_file_descriptor.
TEST_P(FileAttack, OperationsOnAClosedFileAreBadFileDescriptor) {
  run([]() -> task<void> {
    file f;
    std::array<std::byte, 8> b{};
    EXPECT_EQ(err_of(co_await f.read_at(mutable_buffer(b.data(), b.size()), 0)), std::errc::bad_file_descriptor);
    EXPECT_EQ(err_of(co_await f.write_at(const_buffer(b.data(), b.size()), 0)), std::errc::bad_file_descriptor);
    EXPECT_EQ(err_of(co_await f.sync()), std::errc::bad_file_descriptor);
    EXPECT_EQ(err_of(co_await f.sync_data()), std::errc::bad_file_descriptor);
    EXPECT_EQ(err_of(co_await f.truncate(0)), std::errc::bad_file_descriptor);
    EXPECT_EQ(err_of(co_await f.allocate(0, 4096)), std::errc::bad_file_descriptor);
    EXPECT_EQ(err_of(co_await f.stat()), std::errc::bad_file_descriptor);
    EXPECT_FALSE(f.size());
  }());
}

TEST_P(FileAttack, ControlOperationErrors) {
  run([](std::string d) -> task<void> {
    auto f = co_await fs::open(d + "/f", O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return;
    EXPECT_EQ(err_of(co_await f->allocate(0, 0)), std::errc::invalid_argument);
    EXPECT_EQ(err_of(co_await f->allocate(0, 4096, -1)), std::errc::operation_not_supported);
    EXPECT_EQ(err_of(co_await f->truncate(std::uint64_t{1} << 63)), std::errc::invalid_argument);
    auto ro = co_await fs::open(d + "/f", O_RDONLY);
    EXPECT_TRUE(ro);
    if (!ro) co_return;
    EXPECT_EQ(err_of(co_await ro->truncate(0)), std::errc::invalid_argument);
    EXPECT_EQ(err_of(co_await ro->allocate(0, 4096)), std::errc::bad_file_descriptor);
    EXPECT_EQ(err_of(co_await ro->write_at(std::string_view("abc"), 0)), std::errc::bad_file_descriptor);
    auto wo = co_await fs::open(d + "/f", O_WRONLY);
    EXPECT_TRUE(wo);
    if (!wo) co_return;
    std::array<std::byte, 4> b{};
    EXPECT_EQ(err_of(co_await wo->read_at(mutable_buffer(b.data(), b.size()), 0)), std::errc::bad_file_descriptor);
    // A negative offset as the kernel sees it.
    EXPECT_EQ(err_of(co_await f->read_at(mutable_buffer(b.data(), b.size()), ~std::uint64_t{0} - 10)),
              std::errc::invalid_argument);
  }(dir_));
}

// As a user without rights to the file (setresuid in a child process).
TEST_P(FileAttack, PermissionDeniedAsAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing user needs root";
  if (GetParam() == backend_kind::sim) GTEST_SKIP() << "a simulated world cannot be set up again in a child process";
  put(at("secret"), "s");
  ASSERT_EQ(::chmod(at("secret").c_str(), 0600), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  backend_kind kind = GetParam();
  std::string d = dir_;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(90);
    int code = 0;
    try {
      std::optional<sim::world> w;
      if (kind == backend_kind::sim) w.emplace(1);
      io_context c(io_context_options{.backend = kind, .quiet = true});
      code = sync_wait(c, [](std::string d) -> task<int> {
        int bits = 0;
        auto o = co_await fs::open(d + "/secret");
        if (err_of(o) != std::errc::permission_denied) bits |= 1;
        auto m = co_await fs::make_directory(d + "/new");
        if (err_of(m) != std::errc::permission_denied) bits |= 2;
        auto u = co_await fs::remove(d + "/secret");
        if (err_of(u) != std::errc::permission_denied) bits |= 4;
        auto r = co_await fs::read_file(d + "/secret");
        if (err_of(r) != std::errc::permission_denied) bits |= 8;
        auto wf = co_await fs::write_file(d + "/secret", std::string_view("x"));
        if (err_of(wf) != std::errc::permission_denied) bits |= 16;
        co_return bits;
      }(d));
    } catch (...) {
      code = 91;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bit 1 open, 2 mkdir, 4 unlink, 8 read_file, 16 write_file not "
                                       "permission_denied (90: setresuid failed, 91: exception)";
  EXPECT_EQ(slurp(at("secret")), "s");
}

TEST_P(FileAttack, AdoptRefusesAndLeavesTheDescriptor) {
  int pipefd[2];
  ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  auto p = file::adopt(pipefd[0]);
  EXPECT_EQ(err_of(p), std::errc::invalid_argument);
  EXPECT_EQ(::fcntl(pipefd[0], F_GETFD), FD_CLOEXEC) << "a refused descriptor stays open";
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  auto dd = file::adopt(dfd);
  EXPECT_EQ(err_of(dd), std::errc::is_a_directory);
  EXPECT_GE(::fcntl(dfd, F_GETFD), 0);
  auto bad = file::adopt(-1);
  EXPECT_EQ(err_of(bad), std::errc::bad_file_descriptor);
  ::close(pipefd[0]);
  ::close(pipefd[1]);
  ::close(dfd);
}

// ---------------------------------------------------------------------------------
// Transfers at the edges

TEST_P(FileAttack, ShortAndEmptyTransfersAtTheEndOfTheFile) {
  put(at("f"), "0123456789");
  run([](std::string p) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR);
    EXPECT_TRUE(f);
    if (!f) co_return;
    std::array<char, 64> b{};
    auto tail = co_await f->read_at(mutable_buffer(b.data(), b.size()), 7);
    EXPECT_EQ(tail.value_or(99), 3u);
    EXPECT_EQ(std::string(b.data(), 3), "789");
    auto at_end = co_await f->read_at(mutable_buffer(b.data(), b.size()), 10);
    EXPECT_EQ(at_end.value_or(99), 0u);
    auto past_end = co_await f->read_at(mutable_buffer(b.data(), b.size()), 1u << 20);
    EXPECT_EQ(past_end.value_or(99), 0u);
    auto empty_read = co_await f->read_at(mutable_buffer(b.data(), 0), 0);
    EXPECT_EQ(empty_read.value_or(99), 0u);
    auto empty_write = co_await f->write_at(const_buffer(b.data(), 0), 100);
    EXPECT_EQ(empty_write.value_or(99), 0u);
    // An empty write does not grow the file.
    EXPECT_EQ(f->size().value_or(0), 10u);
    auto sparse = co_await f->write_at(std::string_view("Z"), 20);
    EXPECT_EQ(sparse.value_or(0), 1u);
    EXPECT_EQ(f->size().value_or(0), 21u);
    auto hole = co_await f->read_at(mutable_buffer(b.data(), b.size()), 10);
    EXPECT_EQ(hole.value_or(0), 11u);
    EXPECT_EQ(b[0], '\0');
    EXPECT_EQ(b[10], 'Z');
  }(at("f")));
}

TEST_P(FileAttack, VectoredWithNoManyAndEmptyIovecs) {
  put(at("f"), std::string(4096, 'a'));
  run([](std::string p) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR);
    EXPECT_TRUE(f);
    if (!f) co_return;
    auto none_r = co_await f->read_at(std::span<const iovec>(), 0);
    EXPECT_EQ(none_r.value_or(99), 0u);
    auto none_w = co_await f->write_at(std::span<const iovec>(), 0);
    EXPECT_EQ(none_w.value_or(99), 0u);
    // IOV_MAX buffers of one byte each, every other one empty.
    std::vector<char> mem(IOV_MAX, 'q');
    std::vector<iovec> v(IOV_MAX);
    std::size_t total = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = iovec{mem.data() + i, i % 2};
      total += i % 2;
    }
    auto w = co_await f->write_at(std::span<const iovec>(v), 0);
    EXPECT_EQ(w.value_or(0), total);
    std::vector<char> back(IOV_MAX, 0);
    for (std::size_t i = 0; i < v.size(); ++i) v[i].iov_base = back.data() + i;
    auto r = co_await f->read_at(std::span<const iovec>(v), 0);
    EXPECT_EQ(r.value_or(0), total);
    // One more than IOV_MAX: EINVAL.
    std::vector<iovec> over(IOV_MAX + 1, iovec{mem.data(), 1});
    auto too_many = co_await f->read_at(std::span<const iovec>(over), 0);
    EXPECT_EQ(err_of(too_many), std::errc::invalid_argument);
    // Vectored read crossing the end of the file: short.
    std::array<char, 4000> x{}, y{};
    std::array<iovec, 2> two{iovec{x.data(), x.size()}, iovec{y.data(), y.size()}};
    auto short_r = co_await f->read_at(std::span<const iovec>(two), 0);
    EXPECT_EQ(short_r.value_or(0), 4096u);
  }(at("f")));
}

// A read into a buffer far larger than the file (4 GiB of reserved address space)
// returns the file's bytes; a huge write is capped, not refused.
TEST_P(FileAttack, HugeBuffersAreCappedNotRefused) {
  put(at("f"), "tiny");
  const std::size_t huge = std::size_t{4} << 30;
  void* mem = ::mmap(nullptr, huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) GTEST_SKIP() << "cannot reserve 4 GiB of address space";
  run([](std::string p, std::byte* m, std::size_t n) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR);
    EXPECT_TRUE(f);
    if (!f) co_return;
    auto r = co_await f->read_at(mutable_buffer(m, n), 0);
    EXPECT_EQ(r.value_or(0), 4u);
    EXPECT_EQ(std::memcmp(m, "tiny", 4), 0);
  }(at("f"), static_cast<std::byte*>(mem), huge));
  ::munmap(mem, huge);
}

// ---------------------------------------------------------------------------------
// O_DIRECT and aligned_buffer

TEST(AlignedBufferAttack, EdgeCases) {
  aligned_buffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
  aligned_buffer zero(0);
  EXPECT_EQ(zero.size(), 0u);
  EXPECT_EQ(zero.buffer().size(), 0u);
  // A non-power-of-two alignment is rounded up to one.
  aligned_buffer odd(10, 3000);
  EXPECT_EQ(odd.alignment(), 4096u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(odd.data()) % 4096, 0u);
  aligned_buffer one(10, 1);
  EXPECT_GE(one.alignment(), 1u);
  aligned_buffer zero_align(10, 0);
  EXPECT_NE(zero_align.data(), nullptr);
  EXPECT_GE(zero_align.alignment(), 1u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(zero_align.data()) % zero_align.alignment(), 0u);
  // 1 GiB alignment for one byte.
  aligned_buffer big_align(1, std::size_t{1} << 30);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big_align.data()) % (std::size_t{1} << 30), 0u);
  EXPECT_EQ(big_align.data()[0], std::byte{0});
  // Zeroed.
  aligned_buffer z(8192);
  for (std::byte b : z.bytes()) ASSERT_EQ(b, std::byte{0});
  // Moves leave the source empty; self-move keeps the memory.
  aligned_buffer a(4096);
  std::byte* p = a.data();
  aligned_buffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0u);       // NOLINT(bugprone-use-after-move)
  aligned_buffer c(100);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 4096u);
  EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  aligned_buffer& self = c;
  c = std::move(self);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 4096u);
}

// Impossible sizes throw bad_alloc instead of handing out a buffer too small.
TEST(AlignedBufferAttack, ImpossibleSizesThrowBadAlloc) {
  EXPECT_THROW(aligned_buffer(SIZE_MAX), std::bad_alloc);
  EXPECT_THROW(aligned_buffer(SIZE_MAX - 100, 4096), std::bad_alloc);
}

// An alignment above the largest power of two cannot be rounded up: bad_alloc, and
// promptly (run in a child process that a 10 s alarm ends).
TEST(AlignedBufferAttack, ImpossibleAlignmentThrowsBadAlloc) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(10);
    try {
      aligned_buffer b(16, (std::size_t{1} << 63) + 1);
      ::_exit(1);
    } catch (const std::bad_alloc&) {
      ::_exit(0);
    } catch (...) {
      ::_exit(2);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) + " (14: the 10 s alarm)"
                              : "exit " + std::to_string(WEXITSTATUS(status)) + " (1: no exception, 2: another one)");
}

TEST_P(FileAttack, DirectIoMisalignedOffsetLengthAndAddress) {
  std::string p = at("direct");
  int probe = ::open(p.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (probe < 0) GTEST_SKIP() << "the test directory's file system refuses O_DIRECT: " << std::strerror(errno);
  ::close(probe);
  run([](std::string p) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR | O_DIRECT);
    EXPECT_TRUE(f);
    if (!f) co_return;
    const std::size_t align = aligned_buffer::direct_io_alignment(*f);
    aligned_buffer buf(4 * 4096, align);
    auto ok = co_await f->write_at(buf.buffer().first(4096), 0);
    EXPECT_EQ(ok.value_or(0), 4096u);
    if (align > 1) {
      auto bad_off = co_await f->write_at(buf.buffer().first(4096), 1);
      EXPECT_EQ(err_of(bad_off), std::errc::invalid_argument);
      auto bad_off_r = co_await f->read_at(buf.buffer().first(4096), 1);
      EXPECT_EQ(err_of(bad_off_r), std::errc::invalid_argument);
      auto bad_len_r = co_await f->read_at(buf.buffer().first(4097), 0);
      // A read of 4097 bytes at offset 0 of a 4096-byte file: EINVAL, or the 4096 bytes
      // when the kernel shortens the read to the end of the file first.
      EXPECT_TRUE(!bad_len_r ? bad_len_r.error() == std::errc::invalid_argument : *bad_len_r == 4096u);
      std::array<iovec, 2> v{iovec{buf.data() + 1, 4096}, iovec{buf.data() + 8192, 4096}};
      auto bad_vec = co_await f->write_at(std::span<const iovec>(v), 0);
      EXPECT_EQ(err_of(bad_vec), std::errc::invalid_argument);
    }
  }(p));
}

// ---------------------------------------------------------------------------------
// Registered buffers

TEST_P(FileAttack, FixedBuffersMisuse) {
  put(at("f"), std::string(8192, 'f'));
  aligned_buffer mem(2 * 4096);
  aligned_buffer other(4096);
  iovec reg{mem.data(), mem.size()};
  // Registering twice: EBUSY where a set can be registered (io_uring), 0 elsewhere.
  int first = ctx().register_buffers(&reg, 1);
  EXPECT_EQ(first, 0);
  int second = ctx().register_buffers(&reg, 1);
  if (uring()) EXPECT_EQ(second, -EBUSY);
  else EXPECT_EQ(second, 0);
  bool on_ring = uring();
  run([](std::string p, aligned_buffer& mem, aligned_buffer& other, bool on_ring) -> task<void> {
    auto f = co_await fs::open(p, O_RDWR);
    EXPECT_TRUE(f);
    if (!f) co_return;
    auto ok = co_await f->read_fixed_at(mem.buffer().first(4096), 0, 0);
    EXPECT_EQ(ok.value_or(0), 4096u);
    auto tail = co_await f->read_fixed_at(mem.buffer().skip(4096), 4096, 0);
    EXPECT_EQ(tail.value_or(0), 4096u);
    auto past_end = co_await f->read_fixed_at(mem.buffer(), 8192, 0);
    EXPECT_EQ(past_end.value_or(99), 0u);
    if (on_ring) {
      auto outside = co_await f->read_fixed_at(other.buffer(), 0, 0);
      EXPECT_EQ(err_of(outside), std::errc::bad_address);
      auto bad_index = co_await f->read_fixed_at(mem.buffer(), 0, 1);
      EXPECT_TRUE(!bad_index) << "index 1 of a set of one";
      auto huge_index = co_await f->write_fixed_at(mem.buffer(), 0, ~0u);
      EXPECT_TRUE(!huge_index) << "index ~0 of a set of one";
      // A buffer that starts inside the registered one and runs past its end.
      auto overhang = co_await f->read_fixed_at(mutable_buffer(mem.data() + 4096, 8192), 0, 0);
      EXPECT_EQ(err_of(overhang), std::errc::bad_address);
    }
  }(at("f"), mem, other, on_ring));
  ctx().unregister_buffers();
  ctx().unregister_buffers();  // twice: nothing to remove
  // After unregistering, fixed I/O fails on io_uring and stays plain pread elsewhere.
  auto after = run([](std::string p, aligned_buffer& mem) -> task<result<std::size_t>> {
    auto f = co_await fs::open(p, O_RDWR);
    if (!f) co_return unexpected(f.error());
    co_return co_await f->read_fixed_at(mem.buffer(), 0, 0);
  }(at("f"), mem));
  if (uring()) EXPECT_FALSE(after) << "fixed read with no registered set succeeded";
  else EXPECT_EQ(after.value_or(0), 8192u);
  // Registering again after unregistering works.
  EXPECT_EQ(ctx().register_buffers(&reg, 1), 0);
  ctx().unregister_buffers();
}

TEST_P(FileAttack, RegisterBuffersRejectsNonsense) {
  if (!uring()) GTEST_SKIP() << "only io_uring registers buffers";
  EXPECT_LT(ctx().register_buffers(nullptr, 0), 0);
  iovec bad{nullptr, 4096};
  EXPECT_LT(ctx().register_buffers(&bad, 1), 0);
  std::vector<iovec> too_many(1u << 20, iovec{nullptr, 0});
  EXPECT_LT(ctx().register_buffers(too_many.data(), static_cast<unsigned>(too_many.size())), 0);
  // After the failures, a good set can still be registered.
  aligned_buffer mem(4096);
  iovec good{mem.data(), mem.size()};
  EXPECT_EQ(ctx().register_buffers(&good, 1), 0);
  ctx().unregister_buffers();
}

// Buffers registered with one loop are not another loop's.
TEST_P(FileAttack, FixedBuffersOfAnotherLoop) {
  if (!uring()) GTEST_SKIP() << "only io_uring registers buffers";
  put(at("f"), std::string(4096, 'f'));
  aligned_buffer mem(4096);
  iovec reg{mem.data(), mem.size()};
  io_context other(io_context_options{.backend = backend_kind::uring, .quiet = true});
  ASSERT_EQ(other.register_buffers(&reg, 1), 0);
  auto r = run([](std::string p, aligned_buffer& mem) -> task<result<std::size_t>> {
    auto f = co_await fs::open(p, O_RDWR);
    if (!f) co_return unexpected(f.error());
    co_return co_await f->read_fixed_at(mem.buffer(), 0, 0);
  }(at("f"), mem));
  EXPECT_FALSE(r) << "a fixed read used a set registered with another loop";
  other.unregister_buffers();
}

// ---------------------------------------------------------------------------------
// Stops and deadlines

TEST_P(FileAttack, StopBeforeStartOfEveryOperationDoesNothing) {
  put(at("f"), "data");
  std::filesystem::create_directories(at("emptydir"));
  run([](std::string d) -> task<void> {
    std::stop_source src;
    src.request_stop();
    auto tok = src.get_token();
    auto f = co_await fs::open(d + "/f", O_RDWR);
    EXPECT_TRUE(f);
    if (!f) co_return;
    std::array<char, 4> b{};
    std::array<iovec, 1> v{iovec{b.data(), b.size()}};
    const auto canceled = std::errc::operation_canceled;
    EXPECT_EQ(err_of(co_await fs::open(d + "/new", O_CREAT | O_WRONLY, 0600).with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await fs::stat(d + "/f").with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await fs::rename(d + "/f", d + "/g").with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await fs::remove(d + "/f").with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await fs::remove_directory(d + "/emptydir").with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await fs::link(d + "/f", d + "/h").with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await fs::symlink("f", d + "/s").with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await f->write_at(std::string_view("XXXX"), 0).with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await f->write_at(std::span<const iovec>(v), 0).with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await f->read_at(std::span<const iovec>(v), 0).with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await f->truncate(0).with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await f->allocate(0, 1 << 20).with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await f->sync().with_stop(tok)), canceled);
    EXPECT_EQ(err_of(co_await f->stat().with_stop(tok)), canceled);
    EXPECT_EQ(f->size().value_or(0), 4u);
  }(dir_));
  EXPECT_EQ(slurp(at("f")), "data");
  EXPECT_FALSE(std::filesystem::exists(at("new")));
  EXPECT_FALSE(std::filesystem::exists(at("g")));
  EXPECT_FALSE(std::filesystem::exists(at("h")));
  EXPECT_FALSE(std::filesystem::exists(at("s")));
  EXPECT_TRUE(std::filesystem::exists(at("emptydir")));
}

// The helpers built from several operations obey a stop given before they start.
TEST_P(FileAttack, WholeFileHelpersStoppedBeforeStart) {
  put(at("f"), "data");
  run([](std::string d) -> task<void> {
    scope s;
    s.request_stop();
    auto body = [](std::string d) -> task<void> {
      auto r = co_await fs::read_file(d + "/f");
      EXPECT_EQ(err_of(r), std::errc::operation_canceled);
      auto w = co_await fs::write_file(d + "/new", std::string_view("x"));
      EXPECT_EQ(err_of(w), std::errc::operation_canceled);
    };
    s.spawn(body(d));
    co_await s.join();
  }(dir_));
  EXPECT_FALSE(std::filesystem::exists(at("new"))) << "write_file created the file after a stop";
}

// A stop or a deadline after an operation completed changes nothing.
TEST_P(FileAttack, StopAfterCompletionChangesNothing) {
  run([](std::string d) -> task<void> {
    std::stop_source src;
    auto f = co_await fs::open(d + "/f", O_RDWR | O_CREAT, 0600).with_stop(src.get_token());
    EXPECT_TRUE(f);
    src.request_stop();
    if (!f) co_return;
    auto w = co_await with_timeout(f->write_at(std::string_view("abc"), 0), 10s);
    EXPECT_EQ(w.value_or(0), 3u);
    (void)co_await sleep_for(5ms);
    auto t = co_await with_timeout(fs::read_file(d + "/f"), 10s);
    EXPECT_EQ(t ? *t : "<error>", "abc");
  }(dir_));
  EXPECT_EQ(slurp(at("f")), "abc");
}

// A deadline that has already passed when the operation starts.
TEST_P(FileAttack, DeadlineAlreadyPassedBeforeStart) {
  put(at("f"), "data");
  run([](std::string d) -> task<void> {
    auto op = with_timeout(fs::remove(d + "/f"), 1ns);
    (void)co_await sleep_for(5ms);
    auto r = co_await std::move(op);
    // Either it ran (the deadline came after) or it timed out and removed nothing.
    if (!r) {
      EXPECT_EQ(r.error(), std::errc::timed_out);
    }
  }(dir_));
}

// An open blocked on a FIFO (in flight on io_uring) cancelled by a stop: no descriptor
// stays open and the open reports operation_canceled; repeated to catch a lost race.
TEST_P(FileAttack, StoppedFifoOpensLeakNothing) {
  if (!uring()) GTEST_SKIP() << "file operations run synchronously on the loop's thread on this backend";
  std::string p = at("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::atomic<bool> finished{false};
  std::thread rescuer([&] {
    for (int i = 0; i < 300 && !finished; ++i) std::this_thread::sleep_for(100ms);
    while (!finished) {
      int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
      std::this_thread::sleep_for(10ms);
    }
  });
  int canceled = run([](std::string p) -> task<int> {
    int n = 0;
    for (int i = 0; i < 20; ++i) {
      auto t = co_await with_timeout(
          [](std::string p) -> task<result<file>> { co_return co_await fs::open(p, O_RDONLY | O_TRUNC); }(p),
          std::chrono::milliseconds(1 + i % 5));
      if (!t && t.error() == std::errc::timed_out) ++n;
    }
    co_return n;
  }(p));
  finished = true;
  rescuer.join();
  EXPECT_EQ(canceled, 20);
}

// A writer opens the FIFO's other end while the stop races the open: whichever wins,
// the result is a file or operation_canceled and no descriptor is left behind.
TEST_P(FileAttack, FifoOpenStopRacingCompletion) {
  if (!uring()) GTEST_SKIP() << "file operations run synchronously on the loop's thread on this backend";
  std::string p = at("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    while (!done) {
      int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
      std::this_thread::yield();
    }
  });
  auto [opened, canceled] = run([](std::string p) -> task<std::pair<int, int>> {
    int opened = 0, canceled = 0;
    for (int i = 0; i < 200; ++i) {
      std::stop_source src;
      auto stopper = [](std::stop_source& src) -> task<void> {
        co_await yield();
        src.request_stop();
      };
      auto [o, unused] = co_await when_all(fs::open(p, O_RDONLY | O_TRUNC).with_stop(src.get_token()), stopper(src));
      if (o) ++opened;
      else if (o.error() == std::errc::operation_canceled) ++canceled;
      else ADD_FAILURE() << o.error().message();
    }
    co_return std::pair{opened, canceled};
  }(p));
  done = true;
  writer.join();
  EXPECT_EQ(opened + canceled, 200);
}

// The io_context destroyed while opens wait in the kernel: they complete (cancelled)
// before the destructor returns, touching nothing freed.
TEST_P(FileAttack, ContextDestroyedWithOpensInFlight) {
  if (!uring()) GTEST_SKIP() << "file operations run synchronously on the loop's thread on this backend";
  std::string p = at("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::atomic<bool> finished{false};
  std::thread rescuer([&] {
    for (int i = 0; i < 300 && !finished; ++i) std::this_thread::sleep_for(100ms);
    while (!finished) {
      int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
      std::this_thread::sleep_for(10ms);
    }
  });
  std::atomic<int> results{0};
  {
    io_context c(io_context_options{.backend = backend_kind::uring, .quiet = true});
    for (int i = 0; i < 8; ++i) {
      c.spawn([](std::string p, std::atomic<int>& results) -> task<void> {
        auto o = co_await fs::open(p, O_RDONLY | O_TRUNC);
        results.fetch_add(1);
        EXPECT_TRUE(o || o.error() == std::errc::operation_canceled) << o.error().message();
      }(p, results));
      c.spawn([](std::string d, std::atomic<int>& results) -> task<void> {
        auto r = co_await fs::read_file(d + "/fifo");
        results.fetch_add(1);
        (void)r;
      }(dir_, results));
    }
    c.spawn([]() -> task<void> {
      (void)co_await sleep_for(50ms);
      io_context::current()->stop();
    }());
    c.run();  // returns with the opens still waiting in the kernel
  }
  finished = true;
  rescuer.join();
  EXPECT_EQ(results.load(), 16);
}

// ---------------------------------------------------------------------------------
// Chains

TEST_P(FileAttack, ChainOfOneAndOfForty) {
  run([](std::string d) -> task<void> {
    auto f = co_await fs::open(d + "/f", O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return;
    auto [one] = co_await chain(f->write_at(std::string_view("x"), 0));
    EXPECT_EQ(one.value_or(0), 1u);
  }(dir_));
  run([](std::string d) -> task<void> {
    auto f = co_await fs::open(d + "/f", O_RDWR, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return;
    static const char letters[] = "abcdefghijklmnopqrstuvwxyz";
    auto all = co_await [&]<std::size_t... I>(std::index_sequence<I...>) {
      return chain(f->write_at(std::string_view(&letters[I % 26], 1), I)...);
    }(std::make_index_sequence<40>());
    std::size_t good = 0;
    std::apply([&](auto&... r) { ((good += r && *r == 1u ? 1 : 0), ...); }, all);
    EXPECT_EQ(good, 40u);
    EXPECT_EQ(f->size().value_or(0), 40u);
  }(dir_));
  std::string expect;
  for (int i = 0; i < 40; ++i) expect += static_cast<char>('a' + i % 26);
  EXPECT_EQ(slurp(at("f")), expect);
}

// 255 links is the maximum: 256 do not compile.
template <std::size_t... I>
constexpr bool chain_accepts(std::index_sequence<I...>) {
  return requires(detail::path_op op) { chain(((void)I, op)...); };
}
static_assert(chain_accepts(std::make_index_sequence<255>()));
static_assert(!chain_accepts(std::make_index_sequence<256>()));

// A failing write at each position of a chain of four writes (kernel-linked on
// io_uring): the links before it ran, it reports its error, the rest are cancelled.
TEST_P(FileAttack, ChainBrokenByAWriteAtEveryPosition) {
  for (int bad = 0; bad < 4; ++bad) {
    std::string p = at("f" + std::to_string(bad));
    put(p, "");
    run([](std::string p, int bad) -> task<void> {
      auto f = co_await fs::open(p, O_RDWR);
      auto ro = co_await fs::open(p, O_RDONLY);
      EXPECT_TRUE(f && ro);
      if (!f || !ro) co_return;
      auto pick = [&](int i) -> file& { return i == bad ? *ro : *f; };
      auto results =
          co_await chain(pick(0).write_at(std::string_view("a"), 0), pick(1).write_at(std::string_view("b"), 1),
                         pick(2).write_at(std::string_view("c"), 2), pick(3).write_at(std::string_view("d"), 3));
      std::array<std::error_code, 4> e{err_of(std::get<0>(results)), err_of(std::get<1>(results)),
                                       err_of(std::get<2>(results)), err_of(std::get<3>(results))};
      for (int i = 0; i < 4; ++i) {
        if (i < bad) EXPECT_EQ(e[i], std::error_code()) << "link " << i << " failing " << bad;
        else if (i == bad) EXPECT_EQ(e[i], std::errc::bad_file_descriptor) << "link " << i << " failing " << bad;
        else EXPECT_EQ(e[i], std::errc::operation_canceled) << "link " << i << " failing " << bad;
      }
    }(p, bad));
    EXPECT_EQ(slurp(p), std::string("abcd").substr(0, bad)) << "failing link " << bad;
  }
}

// A path link failing at each position of a chain of three mkdirs (run one after the
// other): same table.
TEST_P(FileAttack, ChainBrokenByAPathOperationAtEveryPosition) {
  for (int bad = 0; bad < 3; ++bad) {
    std::string base = at("d" + std::to_string(bad));
    run([](std::string base, int bad) -> task<void> {
      auto name = [&](int i) {
        return i == bad ? base + "/missing/x" : base + (i == 0 ? "" : "/" + std::to_string(i));
      };
      auto [a, b, c] =
          co_await chain(fs::make_directory(name(0)), fs::make_directory(name(1)), fs::make_directory(name(2)));
      std::array<std::error_code, 3> e{err_of(a), err_of(b), err_of(c)};
      for (int i = 0; i < 3; ++i) {
        if (i < bad) EXPECT_EQ(e[i], std::error_code()) << "link " << i << " failing " << bad;
        else if (i == bad) EXPECT_EQ(e[i], std::errc::no_such_file_or_directory) << "link " << i << " failing " << bad;
        else EXPECT_EQ(e[i], std::errc::operation_canceled) << "link " << i << " failing " << bad;
      }
    }(base, bad));
    EXPECT_FALSE(std::filesystem::exists(base + "/2")) << "failing link " << bad;
  }
}

// A short read (at the end of the file) breaks a chain: plain, vectored and fixed.
TEST_P(FileAttack, ShortReadOfEveryKindBreaksTheChain) {
  put(at("f"), "abc");
  aligned_buffer mem(4096);
  iovec reg{mem.data(), mem.size()};
  ASSERT_EQ(ctx().register_buffers(&reg, 1), 0);
  run([](std::string d, aligned_buffer& mem) -> task<void> {
    auto f = co_await fs::open(d + "/f", O_RDWR);
    EXPECT_TRUE(f);
    if (!f) co_return;
    std::array<char, 16> b{};
    std::array<iovec, 2> v{iovec{b.data(), 8}, iovec{b.data() + 8, 8}};
    {
      auto [r, m] = co_await chain(f->read_at(mutable_buffer(b.data(), b.size()), 0), fs::make_directory(d + "/plain"));
      EXPECT_EQ(r.value_or(0), 3u);
      EXPECT_EQ(err_of(m), std::errc::operation_canceled) << "after a short read";
    }
    {
      auto [r, m] = co_await chain(f->read_at(std::span<const iovec>(v), 0), fs::make_directory(d + "/vectored"));
      EXPECT_EQ(r.value_or(0), 3u);
      EXPECT_EQ(err_of(m), std::errc::operation_canceled) << "after a short vectored read";
    }
    {
      auto [r, m] = co_await chain(f->read_fixed_at(mem.buffer().first(16), 0, 0), fs::make_directory(d + "/fixed"));
      EXPECT_EQ(r.value_or(0), 3u);
      EXPECT_EQ(err_of(m), std::errc::operation_canceled) << "after a short fixed read";
    }
    {
      // A vectored read at the end of the file (0 bytes) in the middle of a chain.
      auto [w, r, m] = co_await chain(f->write_at(std::string_view("x"), 3), f->read_at(std::span<const iovec>(v), 100),
                                      fs::make_directory(d + "/vectored_eof"));
      EXPECT_EQ(w.value_or(0), 1u);
      EXPECT_EQ(r.value_or(99), 0u);
      EXPECT_EQ(err_of(m), std::errc::operation_canceled) << "after a vectored read of nothing";
    }
  }(dir_, mem));
  ctx().unregister_buffers();
  EXPECT_FALSE(std::filesystem::exists(at("plain")));
  EXPECT_FALSE(std::filesystem::exists(at("vectored")));
  EXPECT_FALSE(std::filesystem::exists(at("fixed")));
  EXPECT_FALSE(std::filesystem::exists(at("vectored_eof")));
}

// A chain whose first link is already stopped: every link operation_canceled, nothing
// done; the same when the awaiting task is stopped before the chain starts.
TEST_P(FileAttack, ChainWithStoppedFirstLinkDoesNothing) {
  run([](std::string d) -> task<void> {
    auto f = co_await fs::open(d + "/f", O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return;
    std::stop_source stopped;
    stopped.request_stop();
    auto [w, s, m] = co_await chain(f->write_at(std::string_view("abc"), 0).with_stop(stopped.get_token()),
                                    f->sync_data(), fs::make_directory(d + "/x"));
    EXPECT_EQ(err_of(w), std::errc::operation_canceled);
    EXPECT_EQ(err_of(s), std::errc::operation_canceled);
    EXPECT_EQ(err_of(m), std::errc::operation_canceled);
    scope sc;
    sc.request_stop();
    sc.spawn([](std::string d, file& f) -> task<void> {
      auto [w2, m2] = co_await chain(f.write_at(std::string_view("def"), 0), fs::make_directory(d + "/y"));
      EXPECT_EQ(err_of(w2), std::errc::operation_canceled);
      EXPECT_EQ(err_of(m2), std::errc::operation_canceled);
    }(d, *f));
    co_await sc.join();
  }(dir_));
  EXPECT_EQ(slurp(at("f")), "");
  EXPECT_FALSE(std::filesystem::exists(at("x")));
  EXPECT_FALSE(std::filesystem::exists(at("y")));
}

// A stop that arrives between two links of a chain that runs one after the other: the
// first ran, the second is cancelled and does nothing.
TEST_P(FileAttack, ChainStoppedBetweenLinks) {
  run([](std::string d) -> task<void> {
    std::stop_source src;
    // A link that stops the chain's token once it has started: a statx whose path names
    // a file the stopper waits for is not available, so the token is stopped from the
    // first link's completion via a when_all sibling yielding once.
    auto stopper = [](std::stop_source& src) -> task<void> {
      co_await yield();
      src.request_stop();
    };
    auto links = chain(fs::make_directory(d + "/a").with_stop(src.get_token()),
                       fs::make_directory(d + "/a/b").with_stop(src.get_token()),
                       fs::make_directory(d + "/a/b/c").with_stop(src.get_token()));
    auto [r, unused] = co_await when_all(std::move(links), stopper(src));
    auto& [a, b, c] = r;
    // Whatever ran, ran in order; a stopped link and those after it did nothing.
    bool stopped_seen = false;
    for (auto* e : {&a, &b, &c}) {
      if (!*e) {
        EXPECT_EQ(e->error(), std::errc::operation_canceled);
        stopped_seen = true;
      } else {
        EXPECT_FALSE(stopped_seen) << "a link ran after a cancelled one";
      }
    }
  }(dir_));
  if (!std::filesystem::exists(at("a"))) {
    EXPECT_FALSE(std::filesystem::exists(at("a/b")));
  }
}

// Deadlines of single links are dropped, even ones that have already passed.
TEST_P(FileAttack, ChainDropsLinkDeadlines) {
  run([](std::string d) -> task<void> {
    auto f = co_await fs::open(d + "/f", O_RDWR | O_CREAT, 0600);
    EXPECT_TRUE(f);
    if (!f) co_return;
    auto w = with_timeout(f->write_at(std::string_view("abc"), 0), 1ns);
    auto s = with_timeout(f->sync_data(), 1ns);
    (void)co_await sleep_for(2ms);
    auto [wr, sr] = co_await chain(std::move(w), std::move(s));
    EXPECT_EQ(wr.value_or(0), 3u) << (wr ? "" : wr.error().message());
    EXPECT_TRUE(sr) << sr.error().message();
  }(dir_));
  EXPECT_EQ(slurp(at("f")), "abc");
}

// A whole chain bounded by with_timeout(task): a FIFO open as the first link never
// finishes, the deadline cancels it and the next link.
TEST_P(FileAttack, ChainBoundedByATaskDeadline) {
  if (!uring()) GTEST_SKIP() << "a FIFO open would block the loop's thread on this backend";
  std::string p = at("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::atomic<bool> finished{false};
  std::thread rescuer([&] {
    for (int i = 0; i < 300 && !finished; ++i) std::this_thread::sleep_for(100ms);
    while (!finished) {
      int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
      std::this_thread::sleep_for(10ms);
    }
  });
  auto r = run([](std::string p) -> task<std::error_code> {
    auto t = co_await with_timeout(
        [](std::string p) -> task<void> {
          auto [o, m] = co_await chain(fs::open(p, O_RDONLY | O_TRUNC), fs::make_directory(p + ".d"));
          EXPECT_EQ(err_of(o), std::errc::operation_canceled);
          EXPECT_EQ(err_of(m), std::errc::operation_canceled);
        }(p),
        20ms);
    co_return t ? std::error_code() : t.error();
  }(p));
  finished = true;
  rescuer.join();
  EXPECT_EQ(r, std::errc::timed_out);
  EXPECT_FALSE(std::filesystem::exists(p + ".d"));
}

// ---------------------------------------------------------------------------------
// Whole-file helpers

TEST_P(FileAttack, ReadFileBoundExactlyAtTheSize) {
  put(at("f"), std::string(1000, 'r'));
  put(at("empty"), "");
  run([](std::string d) -> task<void> {
    auto exact = co_await fs::read_file(d + "/f", 1000);
    EXPECT_EQ(exact ? exact->size() : 0u, 1000u) << (exact ? "" : exact.error().message());
    auto under = co_await fs::read_file(d + "/f", 999);
    EXPECT_EQ(err_of(under), std::errc::file_too_large);
    auto zero_bound = co_await fs::read_file(d + "/empty", 0);
    EXPECT_EQ(zero_bound ? zero_bound->size() : 99u, 0u);
    auto zero_bound_nonempty = co_await fs::read_file(d + "/f", 0);
    EXPECT_EQ(err_of(zero_bound_nonempty), std::errc::file_too_large);
    auto dir = co_await fs::read_file(d);
    EXPECT_EQ(err_of(dir), std::errc::is_a_directory);
    auto missing = co_await fs::read_file(d + "/missing");
    EXPECT_EQ(err_of(missing), std::errc::no_such_file_or_directory);
  }(dir_));
}

// /proc files report size 0 but have content; the bound still applies to what is read.
TEST_P(FileAttack, ReadFileOfProcFilesWhoseSizeLies) {
  std::string maps_direct = slurp("/proc/self/cmdline");
  run([](std::string expect) -> task<void> {
    auto cmd = co_await fs::read_file("/proc/self/cmdline");
    EXPECT_EQ(cmd ? *cmd : "<error>", expect);
    auto maps = co_await fs::read_file("/proc/self/maps");
    EXPECT_TRUE(maps && maps->size() > 100) << (maps ? std::to_string(maps->size()) : maps.error().message());
    auto bounded = co_await fs::read_file("/proc/self/maps", 16);
    EXPECT_EQ(err_of(bounded), std::errc::file_too_large)
        << (bounded ? "returned " + std::to_string(bounded->size()) + " bytes" : "");
  }(maps_direct));
}

// A sysfs file reports 4096 bytes but holds a few: its content is under a small bound.
TEST_P(FileAttack, ReadFileOfSysfsFileWhoseSizeOverstates) {
  const char* p = "/sys/kernel/mm/transparent_hugepage/enabled";
  struct stat st {};
  std::string direct = slurp(p);
  if (::stat(p, &st) != 0 || direct == "<missing>" || static_cast<std::size_t>(st.st_size) <= direct.size())
    GTEST_SKIP() << "no sysfs file with an overstated size here";
  auto r = run([](std::string p, std::size_t bound) -> task<result<std::string>> {
    co_return co_await fs::read_file(p, bound);
  }(p, direct.size() + 16));
  EXPECT_EQ(r ? *r : r.error().message(), direct);
}

// A character device with no end (/dev/zero): the bound stops the read.
TEST_P(FileAttack, ReadFileOfAnEndlessDeviceStopsAtTheBound) {
  auto r = run([]() -> task<result<std::string>> {
    auto t = co_await with_timeout(fs::read_file("/dev/zero", 1 << 20), 10s);
    if (!t) co_return unexpected(t.error());
    co_return std::move(*t);
  }());
  EXPECT_EQ(err_of(r), std::errc::file_too_large) << (r ? "returned " + std::to_string(r->size()) + " bytes" : "");
}

// A file that grows while it is read: the result never exceeds the bound.
TEST_P(FileAttack, ReadFileOfAGrowingFileKeepsTheBound) {
  std::string p = at("grow");
  put(p, std::string(64 * 1024, 'g'));
  std::atomic<bool> done{false};
  std::thread grower([&] {
    int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    std::string chunk(4096, 'h');
    while (!done && fd >= 0) {
      if (::write(fd, chunk.data(), chunk.size()) < 0) break;
      struct stat st {};
      if (::fstat(fd, &st) == 0 && st.st_size > (64 << 20)) ::ftruncate(fd, 64 * 1024);
    }
    if (fd >= 0) ::close(fd);
  });
  const std::size_t bound = 1 << 20;
  auto sizes = run([](std::string p, std::size_t bound) -> task<std::vector<std::size_t>> {
    std::vector<std::size_t> out;
    for (int i = 0; i < 50; ++i) {
      auto r = co_await fs::read_file(p, bound);
      if (r) out.push_back(r->size());
      else EXPECT_TRUE(r.error() == std::errc::file_too_large) << r.error().message();
    }
    co_return out;
  }(p, bound));
  done = true;
  grower.join();
  for (std::size_t s : sizes) EXPECT_LE(s, bound);
}

// A file that shrinks and grows back under the reader: every read ends (with the bytes
// it saw or an error) and touches no memory out of bounds (checked under ASan).
TEST_P(FileAttack, ReadFileOfAShrinkingFile) {
  std::string p = at("shrink");
  std::atomic<bool> done{false};
  put(p, std::string(256 * 1024, 's'));
  std::thread shrinker([&] {
    while (!done) {
      int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) break;
      ::ftruncate(fd, 100);
      std::string big(256 * 1024, 's');
      ::pwrite(fd, big.data(), big.size(), 0);
      ::close(fd);
    }
  });
  auto bad = run([](std::string p) -> task<int> {
    int bad = 0;
    for (int i = 0; i < 100; ++i) {
      auto r = co_await fs::read_file(p);
      if (!r) continue;
      for (char c : *r)
        if (c != 's') {
          ++bad;
          break;
        }
    }
    co_return bad;
  }(p));
  done = true;
  shrinker.join();
  // Bytes in the hole a truncation leaves read as zeros, so no content is asserted.
  (void)bad;
}

TEST_P(FileAttack, WriteHelpersErrorsAndEmptyData) {
  std::filesystem::create_directories(at("dir"));
  run([](std::string d) -> task<void> {
    auto to_dir = co_await fs::write_file(d + "/dir", std::string_view("x"));
    EXPECT_EQ(err_of(to_dir), std::errc::is_a_directory);
    auto missing_parent = co_await fs::write_file(d + "/missing/f", std::string_view("x"));
    EXPECT_EQ(err_of(missing_parent), std::errc::no_such_file_or_directory);
    auto excl = co_await fs::write_file(d + "/dir", std::string_view("x"), O_WRONLY | O_CREAT | O_EXCL);
    EXPECT_EQ(err_of(excl), std::errc::file_exists);
    auto empty = co_await fs::write_file(d + "/empty", const_buffer());
    EXPECT_TRUE(empty) << empty.error().message();
    auto f = co_await fs::open(d + "/empty", O_RDWR);
    EXPECT_TRUE(f);
    if (!f) co_return;
    auto none = co_await fs::write_all_at(*f, const_buffer(), 0);
    EXPECT_EQ(none.value_or(99), 0u);
    auto ro = co_await fs::open(d + "/empty", O_RDONLY);
    EXPECT_TRUE(ro);
    if (!ro) co_return;
    auto bad = co_await fs::write_all_at(*ro, std::string_view("abc"), 0);
    EXPECT_EQ(err_of(bad), std::errc::bad_file_descriptor);
    std::string big(3 << 20, 'w');
    auto all = co_await fs::write_all_at(*f, const_buffer(big.data(), big.size()), 5);
    EXPECT_EQ(all.value_or(0), big.size());
    EXPECT_EQ(f->size().value_or(0), big.size() + 5);
  }(dir_));
}

// write_all_at on a file at the size limit (RLIMIT_FSIZE): the bytes that fit are
// written and reported; SIGXFSZ is ignored for the test.
TEST_P(FileAttack, WriteAllAtReportsThePartialCountAtTheSizeLimit) {
  struct rlimit old {};
  ::getrlimit(RLIMIT_FSIZE, &old);
  auto prev = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 10000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  auto r = run([](std::string d) -> task<std::pair<result<std::size_t>, result<std::size_t>>> {
    auto f = co_await fs::open(d + "/f", O_RDWR | O_CREAT, 0600);
    if (!f) co_return std::pair{result<std::size_t>(unexpected(f.error())), result<std::size_t>(0)};
    std::string big(20000, 'w');
    auto partial = co_await fs::write_all_at(*f, const_buffer(big.data(), big.size()), 0);
    auto nothing = co_await fs::write_all_at(*f, const_buffer(big.data(), big.size()), 10000);
    co_return std::pair{partial, nothing};
  }(dir_));
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, prev);
  EXPECT_EQ(r.first.value_or(0), 10000u) << (r.first ? "" : r.first.error().message());
  EXPECT_EQ(err_of(r.second), std::errc::file_too_large);
}

RINGIO_ALL_BACKENDS_AND_SIM(FileAttack);

}  // namespace
