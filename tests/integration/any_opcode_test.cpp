// SPDX-License-Identifier: Apache-2.0
// ringio::any_opcode, the escape hatch for io_uring opcodes without a wrapper, on every
// backend: requests through io_uring_prep_* (nop, a pipe read, statx, a timeout), the
// cancellation rules (stop before the start, in flight, after completion), deadlines,
// the refusals (other backends, an opcode the probe lacks, SQEs ringio cannot track),
// transforms of the result, and the sender form with sync_wait, when_all and when_any.
#include "ringio/any_opcode.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>

#include "ringio/exec.hpp"
#include "ringio/exec/any_opcode.hpp"
#include "ringio/ringio.hpp"
#include "sender_support.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
namespace ex = ringio::exec;

namespace {

class AnyOpcode : public backend_test {
 protected:
  bool on_uring() const { return GetParam() == backend_kind::uring; }
};

// A pipe whose two ends are closed with it.
struct pipe_fds {
  int read_end = -1;
  int write_end = -1;
  pipe_fds() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      read_end = fds[0];
      write_end = fds[1];
    }
  }
  ~pipe_fds() {
    ::close(read_end);
    ::close(write_end);
  }
  pipe_fds(const pipe_fds&) = delete;
  pipe_fds& operator=(const pipe_fds&) = delete;
};

void write_text(int fd, const std::string& s) { ASSERT_EQ(::write(fd, s.data(), s.size()), ssize_t(s.size())); }

// What a plain non-blocking read of the pipe finds now ("" when empty).
std::string drain(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::array<char, 64> buf{};
  const ssize_t n = ::read(fd, buf.data(), buf.size());
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string();
}

// The other backends refuse every request at once: what a test that runs a request
// checks there instead. Returns whether it did (the test ends).
template <class T>
bool refused_off_uring(backend_kind k, const result<T>& r) {
  if (k == backend_kind::uring) return false;
  EXPECT_FALSE(r);
  if (!r) {
    EXPECT_EQ(r.error(), std::errc::operation_not_supported) << r.error().message();
  }
  return true;
}

TEST_P(AnyOpcode, NopCompletesWithZero) {
  auto r = run([]() -> task<result<int>> {
    auto prep = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    co_return co_await any_opcode(prep);
  }());
  if (!on_uring()) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), std::errc::operation_not_supported) << r.error().message();
    return;
  }
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 0);
  EXPECT_EQ(ctx().in_flight(), 0u);
}

TEST_P(AnyOpcode, ReadsFromAPipe) {
  pipe_fds p;
  write_text(p.write_end, "hello");
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<result<int>> {
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 5, static_cast<__u64>(-1)); };
    co_return co_await any_opcode(prep);
  }(p.read_end, buf));
  if (refused_off_uring(GetParam(), r)) return;
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 5);
  EXPECT_EQ(std::string(buf.data(), 5), "hello");
}

// statx through the hatch agrees with fs::stat (ringio's own statx), and a transform
// turns the CQE into the value wanted.
TEST_P(AnyOpcode, StatxThroughTheHatchAgreesWithFsStat) {
  const std::string path = ::testing::TempDir() + "ringio-any-opcode-" + std::to_string(::getpid());
  {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "0123456789", 10), 10);
    ::close(fd);
  }
  struct sizes {
    std::uint64_t hatch = 0;
    std::uint64_t wrapped = 0;
  };
  auto r = run([](const std::string& path) -> task<result<sizes>> {
    struct statx out {};
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_statx(sqe, AT_FDCWD, path.c_str(), 0, STATX_SIZE, &out); };
    auto size_of = [&out](int) noexcept { return static_cast<std::uint64_t>(out.stx_size); };
    auto hatch = co_await any_opcode(prep, size_of);
    if (!hatch) co_return unexpected(hatch.error());
    auto wrapped = co_await fs::stat(path, STATX_SIZE);
    if (!wrapped) co_return unexpected(wrapped.error());
    co_return sizes{*hatch, wrapped->stx_size};
  }(path));
  ::unlink(path.c_str());
  if (refused_off_uring(GetParam(), r)) return;
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->hatch, 10u);
  EXPECT_EQ(r->wrapped, 10u);
}

// A kernel timeout through the hatch reports what the kernel posts: -ETIME.
TEST_P(AnyOpcode, KernelTimeoutReportsEtime) {
  auto r = run([]() -> task<result<int>> {
    __kernel_timespec ts{0, 5'000'000};
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_timeout(sqe, &ts, 0, 0); };
    co_return co_await any_opcode(prep);
  }());
  if (refused_off_uring(GetParam(), r)) return;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::stream_timeout) << r.error().message();
}

// A transform that fails, one that sees the CQE flags, one that returns nothing.
TEST_P(AnyOpcode, TransformsShapeTheResult) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse (OtherBackendsRefuseAtOnce)";
  run([]() -> task<void> {
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    auto refuse = [](int) -> result<std::string> { return unexpected(std::errc::bad_message); };
    auto failed = co_await any_opcode(nop, refuse);
    EXPECT_FALSE(failed);
    if (!failed) {
      EXPECT_EQ(failed.error(), std::errc::bad_message);
    }
    auto with_flags = [](int res, unsigned flags) { return std::to_string(res) + "/" + std::to_string(flags); };
    auto described = co_await any_opcode(nop, with_flags);
    EXPECT_TRUE(described);
    if (described) {
      EXPECT_EQ(*described, "0/0");
    }
    auto nothing = [](int) {};
    result<void> done = co_await any_opcode(nop, nothing);
    EXPECT_TRUE(done);
    // A preparer may take the SQE by reference; a transform may return a reference.
    auto by_reference = [](io_uring_sqe& sqe) { io_uring_prep_nop(&sqe); };
    const std::string kept = "kept";
    auto reference = [&kept](int) -> const std::string& { return kept; };
    result<std::string> copied = co_await any_opcode(by_reference, reference);
    EXPECT_TRUE(copied);
    if (copied) {
      EXPECT_EQ(*copied, "kept");
    }
  }());
}

TEST_P(AnyOpcode, OtherBackendsRefuseAtOnce) {
  if (on_uring()) GTEST_SKIP() << "the io_uring backend runs the request (NopCompletesWithZero)";
  pipe_fds p;
  write_text(p.write_end, "kept");
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<result<int>> {
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 4, static_cast<__u64>(-1)); };
    co_return co_await with_timeout(any_opcode(prep), 5s);
  }(p.read_end, buf));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::operation_not_supported) << r.error().message();
  EXPECT_EQ(drain(p.read_end), "kept");  // nothing ran
  EXPECT_EQ(ctx().in_flight(), 0u);
}

TEST_P(AnyOpcode, StopBeforeStartSendsNothing) {
  pipe_fds p;
  write_text(p.write_end, "kept");
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<result<int>> {
    std::stop_source stop;
    stop.request_stop();
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 4, static_cast<__u64>(-1)); };
    co_return co_await any_opcode(prep).with_stop(stop.get_token());
  }(p.read_end, buf));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::operation_canceled) << r.error().message();
  EXPECT_EQ(drain(p.read_end), "kept");  // no SQE was sent
}

// A read of an empty pipe never completes on its own: the stop's ASYNC_CANCEL ends it,
// and the operation completes only with its own CQE (-ECANCELED).
TEST_P(AnyOpcode, StopInFlightCancelsAReadThatNeverCompletes) {
  pipe_fds p;
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<result<int>> {
    std::stop_source stop;
    scope timer(std::stop_token{});
    timer.spawn([](std::stop_source& stop) -> task<void> {
      (void)co_await sleep_for(20ms);
      stop.request_stop();
    }(stop));
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), static_cast<__u64>(-1)); };
    auto got = co_await any_opcode(prep).with_stop(stop.get_token());
    co_await timer.join();
    co_return got;
  }(p.read_end, buf));
  if (refused_off_uring(GetParam(), r)) return;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::operation_canceled) << r.error().message();
  EXPECT_EQ(ctx().in_flight(), 0u);
  // The cancelled read took nothing: what is written now is all there.
  write_text(p.write_end, "after");
  EXPECT_EQ(drain(p.read_end), "after");
}

// A stop requested on another thread travels to the loop, which sends the cancel.
TEST_P(AnyOpcode, StopFromAnotherThreadCancelsTheRequest) {
  pipe_fds p;
  std::array<char, 16> buf{};
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(20ms);
    stop.request_stop();
  });
  auto r = run([](int fd, std::array<char, 16>& buf, std::stop_token token) -> task<result<int>> {
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), static_cast<__u64>(-1)); };
    co_return co_await any_opcode(prep).with_stop(std::move(token));
  }(p.read_end, buf, stop.get_token()));
  stopper.join();
  if (refused_off_uring(GetParam(), r)) return;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::operation_canceled) << r.error().message();
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// ringio::chain runs hatch requests one after the other; a failed link cancels the rest.
TEST_P(AnyOpcode, ChainRunsRequestsInOrder) {
  auto results = run([]() -> task<std::tuple<result<int>, result<int>>> {
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    co_return co_await chain(any_opcode(nop), any_opcode(nop));
  }());
  auto& [first, second] = results;
  if (refused_off_uring(GetParam(), first)) {
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error(), std::errc::operation_canceled) << second.error().message();
    return;
  }
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(*first, 0);
  EXPECT_EQ(*second, 0);
}

// A stop of the awaiting task (when_any's loser) reaches the request too.
TEST_P(AnyOpcode, TaskStopReachesTheRequest) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse (OtherBackendsRefuseAtOnce)";
  pipe_fds p;
  std::array<char, 16> buf{};
  auto which = run([](int fd, std::array<char, 16>& buf) -> task<std::size_t> {
    auto reader = [](int fd, std::array<char, 16>& buf) -> task<result<int>> {
      auto prep = [&](io_uring_sqe* sqe) {
        io_uring_prep_read(sqe, fd, buf.data(), buf.size(), static_cast<__u64>(-1));
      };
      co_return co_await any_opcode(prep);
    };
    auto r = co_await when_any(reader(fd, buf), sleep_for(20ms));
    co_return r.index();
  }(p.read_end, buf));
  EXPECT_EQ(which, 1u);  // the timer won; the read was cancelled and waited for
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// A cancel that loses the race delivers the real result: the stop comes while the
// read's SQE still waits in the submission queue, so the cancel follows it in the same
// submission and finds the read already done (the pipe held data).
TEST_P(AnyOpcode, CancelThatLosesTheRaceDeliversTheData) {
  pipe_fds p;
  write_text(p.write_end, "won");
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<result<int>> {
    std::stop_source stop;
    result<int> got = unexpected(std::errc::no_message);
    auto reader = [](int fd, std::array<char, 16>& buf, std::stop_token token, result<int>& got) -> task<void> {
      auto prep = [&](io_uring_sqe* sqe) {
        io_uring_prep_read(sqe, fd, buf.data(), buf.size(), static_cast<__u64>(-1));
      };
      got = co_await any_opcode(prep).with_stop(std::move(token));
    };
    scope s(std::stop_token{});
    s.spawn(reader(fd, buf, stop.get_token(), got));  // runs until the read is started
    stop.request_stop();
    co_await s.join();
    co_return got;
  }(p.read_end, buf));
  if (refused_off_uring(GetParam(), r)) return;
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(std::string(buf.data(), static_cast<std::size_t>(*r)), "won");
}

TEST_P(AnyOpcode, StopAfterCompletionChangesNothing) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse (OtherBackendsRefuseAtOnce)";
  pipe_fds p;
  write_text(p.write_end, "data");
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<result<int>> {
    std::stop_source stop;
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), static_cast<__u64>(-1)); };
    auto got = co_await any_opcode(prep).with_stop(stop.get_token());
    stop.request_stop();  // the operation is finished: its callback is gone
    (void)co_await sleep_for(1ms);
    co_return got;
  }(p.read_end, buf));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 4);
  EXPECT_EQ(std::string(buf.data(), 4), "data");
}

TEST_P(AnyOpcode, WithTimeoutBoundsTheRequest) {
  pipe_fds p;
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<result<int>> {
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), static_cast<__u64>(-1)); };
    co_return co_await with_timeout(any_opcode(prep), 20ms);
  }(p.read_end, buf));
  if (refused_off_uring(GetParam(), r)) return;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::timed_out) << r.error().message();
  EXPECT_EQ(ctx().in_flight(), 0u);
  // In time, the deadline changes nothing.
  write_text(p.write_end, "in time");
  auto ok = run([](int fd, std::array<char, 16>& buf) -> task<result<int>> {
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), static_cast<__u64>(-1)); };
    co_return co_await with_timeout(any_opcode(prep), 10s);
  }(p.read_end, buf));
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(std::string(buf.data(), static_cast<std::size_t>(*ok)), "in time");
}

// An opcode past any kernel's last one: the probe lacks it, nothing is submitted.
TEST_P(AnyOpcode, OpcodeTheProbeLacksIsRefused) {
  auto r = run([]() -> task<result<int>> {
    auto prep = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->opcode = 250;
    };
    co_return co_await any_opcode(prep);
  }());
  if (refused_off_uring(GetParam(), r)) return;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::function_not_supported) << r.error().message();
}

// IORING_OP_FADVISE hidden from the probe (RINGIO_URING_HIDE_OPCODES=24, as ctest's
// AnyOpcodeWithoutFadvise runs it): refused, as on a kernel without it.
TEST_P(AnyOpcode, OpcodeHiddenFromTheProbeIsRefused) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse (OtherBackendsRefuseAtOnce)";
  const char* hidden = std::getenv("RINGIO_URING_HIDE_OPCODES");
  const bool fadvise_hidden = hidden != nullptr && std::string(",") + hidden + "," == ",24,";
  auto r = run([]() -> task<result<int>> {
    auto prep = [](io_uring_sqe* sqe) { io_uring_prep_fadvise(sqe, STDIN_FILENO, 0, 0, POSIX_FADV_NORMAL); };
    co_return co_await any_opcode(prep);
  }());
  if (!fadvise_hidden) {
    // stdin may be anything (a pipe: ESPIPE); whatever the kernel says, it ran.
    if (!r) {
      EXPECT_NE(r.error(), std::errc::function_not_supported) << r.error().message();
    }
    GTEST_SKIP() << "run with RINGIO_URING_HIDE_OPCODES=24 (ctest AnyOpcodeWithoutFadvise) for the refusal";
  }
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::function_not_supported) << r.error().message();
}

// What ringio cannot track is refused on every backend, before anything is sent.
TEST_P(AnyOpcode, UntrackableRequestsAreRefused) {
  run([]() -> task<void> {
    auto user_data = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, 42);
    };
    auto linked = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->flags |= IOSQE_IO_LINK;
    };
    auto drained = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->flags |= IOSQE_IO_DRAIN;
    };
    auto skipped = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
    };
    auto multishot = [](io_uring_sqe* sqe) { io_uring_prep_multishot_accept(sqe, 0, nullptr, nullptr, 0); };
    auto poll_multi = [](io_uring_sqe* sqe) { io_uring_prep_poll_multishot(sqe, 0, POLLIN); };
    auto message = [](io_uring_sqe* sqe) { io_uring_prep_msg_ring(sqe, 0, 0, 0, 0); };
    auto zero_copy = [](io_uring_sqe* sqe) { io_uring_prep_send_zc(sqe, 0, nullptr, 0, 0, 0); };
    auto refused = [](result<int> r) {
      EXPECT_FALSE(r);
      if (!r) {
        EXPECT_EQ(r.error(), std::errc::invalid_argument) << r.error().message();
      }
    };
    refused(co_await any_opcode(user_data));
    refused(co_await any_opcode(linked));
    refused(co_await any_opcode(drained));
    refused(co_await any_opcode(skipped));
    refused(co_await any_opcode(multishot));
    refused(co_await any_opcode(poll_multi));
    refused(co_await any_opcode(message));
    refused(co_await any_opcode(zero_copy));
  }());
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// ---- the sender form ----

TEST_P(AnyOpcode, SenderCompletesWithTheResult) {
  auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
  if (!on_uring()) {
    try {
      (void)ex::sync_wait(ctx(), ex::any_opcode(nop));
      ADD_FAILURE() << "no error";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::operation_not_supported) << e.code().message();
    }
    return;
  }
  auto r = ex::sync_wait(ctx(), ex::any_opcode(nop));
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<0>(*r), 0);
}

TEST_P(AnyOpcode, SendersRunTogetherInWhenAll) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse (SenderCompletesWithTheResult)";
  pipe_fds p;
  write_text(p.write_end, "abc");
  std::array<char, 16> buf{};
  auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
  auto read = [&](io_uring_sqe* sqe) {
    io_uring_prep_read(sqe, p.read_end, buf.data(), buf.size(), static_cast<__u64>(-1));
  };
  auto as_size = [](int res) noexcept { return static_cast<std::size_t>(res); };
  auto r = ex::sync_wait(ctx(), ex::when_all(ex::any_opcode(nop), ex::any_opcode(read, as_size)));
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<0>(*r), 0);
  EXPECT_EQ(std::get<1>(*r), 3u);
  EXPECT_EQ(std::string(buf.data(), 3), "abc");
}

TEST_P(AnyOpcode, SenderStopsBeforeStartAndInFlight) {
  pipe_fds p;
  std::array<char, 16> buf{};
  auto read = [&](io_uring_sqe* sqe) {
    io_uring_prep_read(sqe, p.read_end, buf.data(), buf.size(), static_cast<__u64>(-1));
  };
  std::stop_source stop;
  stop.request_stop();
  auto before = ex::sync_wait(ctx(), with_token(ex::any_opcode(read), stop.get_token()));
  EXPECT_FALSE(before.has_value());  // set_stopped, on every backend: the stop comes first
  if (!on_uring()) return;
  // In flight: when_any stops the read once the timer fails, and waits for its CQE.
  try {
    (void)ex::sync_wait(ctx(), ex::when_any(ex::any_opcode(read), ex::fail_after(20ms)));
    ADD_FAILURE() << "the read of an empty pipe completed";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::timed_out) << e.code().message();
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
  write_text(p.write_end, "later");
  EXPECT_EQ(drain(p.read_end), "later");
}

RINGIO_ALL_BACKENDS_AND_SIM(AnyOpcode);

}  // namespace
