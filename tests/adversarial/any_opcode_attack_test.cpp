// SPDX-License-Identifier: Apache-2.0
// ringio::any_opcode held to its promises (docs/any_opcode.md, docs/design.md): SQEs
// that ringio must refuse, wrapped so the refusal could be skipped (with_timeout, the
// sender form, chain); requests aimed at other operations' user_data (cancel, poll and
// timeout updates); preparers and transforms that throw; a stop at every point, from
// other threads too; thousands of requests over the in-flight cap; the context's
// shutdown with requests in flight; the other backends touching nothing; the sender
// connected and never started, started off the loop; and zero allocations.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include "integration/sender_support.hpp"
#include "ringio/any_opcode.hpp"
#include "ringio/exec.hpp"
#include "ringio/exec/any_opcode.hpp"
#include "ringio/fiber.hpp"
#include "ringio/fs/chain.hpp"
#include "ringio/fs/file.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/sanitizer.hpp"
#include "support/syscall_filter.hpp"
#include "support/watchdog.hpp"

// ThreadSanitizer's runtime defines the global operator new and delete itself: the
// counting replacement (and the allocation probe) is left out there.
#if defined(__SANITIZE_THREAD__)
#define ANY_ATTACK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ANY_ATTACK_TSAN 1
#endif
#endif
#ifndef ANY_ATTACK_TSAN
#include "support/counting_new.hpp"
#endif

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
namespace ex = ringio::exec;

namespace {

// Opcodes and flags newer than the installed liburing header.
constexpr std::uint8_t op_read_multishot = 49;
constexpr std::uint8_t op_futex_wait = 51;
constexpr unsigned timeout_multishot = 1U << 6;
constexpr int futex2_size_u32 = 0x02;

class AnyOpcodeAttack : public backend_test {
 protected:
  bool on_uring() const { return GetParam() == backend_kind::uring; }
};

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
    if (read_end >= 0) ::close(read_end);
    if (write_end >= 0) ::close(write_end);
  }
  pipe_fds(const pipe_fds&) = delete;
  pipe_fds& operator=(const pipe_fds&) = delete;
};

void write_text(int fd, const std::string& s) { ASSERT_EQ(::write(fd, s.data(), s.size()), ssize_t(s.size())); }

// Everything a non-blocking read finds in the pipe now (the pipe stays non-blocking).
std::string drain(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  return out;
}

std::unique_ptr<io_context> capped_uring(unsigned cap) {
  try {
    return std::make_unique<io_context>(io_context_options{
        .backend = backend_kind::uring, .sq_entries = 8, .cq_entries = 16, .max_in_flight = cap, .quiet = true});
  } catch (const std::system_error&) {
    return nullptr;
  }
}

std::string describe(const result<int>& r) { return r ? "value " + std::to_string(*r) : r.error().message(); }

__u64 user_data_of(const detail::op_base& op) { return reinterpret_cast<std::uintptr_t>(&op); }

// ---- SQEs ringio promises to refuse, however the operation is wrapped ----

// One refused SQE of each kind the documentation lists, built by its name.
struct untrackable {
  const char* name;
  void (*prep)(io_uring_sqe*);
};

// File descriptor the refused SQEs name: never used, since nothing may be submitted.
constexpr int unused_fd = 1'000'000;

const std::vector<untrackable>& untrackable_sqes() {
  static const std::vector<untrackable> all = {
      {"user_data",
       [](io_uring_sqe* s) {
         io_uring_prep_nop(s);
         io_uring_sqe_set_data64(s, 42);
       }},
      {"IOSQE_IO_LINK",
       [](io_uring_sqe* s) {
         io_uring_prep_nop(s);
         s->flags |= IOSQE_IO_LINK;
       }},
      {"IOSQE_IO_HARDLINK",
       [](io_uring_sqe* s) {
         io_uring_prep_nop(s);
         s->flags |= IOSQE_IO_HARDLINK;
       }},
      {"IOSQE_IO_DRAIN",
       [](io_uring_sqe* s) {
         io_uring_prep_nop(s);
         s->flags |= IOSQE_IO_DRAIN;
       }},
      {"IOSQE_CQE_SKIP_SUCCESS",
       [](io_uring_sqe* s) {
         io_uring_prep_nop(s);
         s->flags |= IOSQE_CQE_SKIP_SUCCESS;
       }},
      {"IOSQE_BUFFER_SELECT",
       [](io_uring_sqe* s) {
         io_uring_prep_read(s, unused_fd, nullptr, 16, 0);
         s->flags |= IOSQE_BUFFER_SELECT;
         s->buf_group = 7;
       }},
      {"multishot accept", [](io_uring_sqe* s) { io_uring_prep_multishot_accept(s, unused_fd, nullptr, nullptr, 0); }},
      {"multishot recv", [](io_uring_sqe* s) { io_uring_prep_recv_multishot(s, unused_fd, nullptr, 0, 0); }},
      {"multishot recvmsg", [](io_uring_sqe* s) { io_uring_prep_recvmsg_multishot(s, unused_fd, nullptr, 0); }},
      {"multishot poll", [](io_uring_sqe* s) { io_uring_prep_poll_multishot(s, unused_fd, POLLIN); }},
      {"multishot timeout",
       [](io_uring_sqe* s) {
         static __kernel_timespec ts{0, 1'000'000};
         io_uring_prep_timeout(s, &ts, 0, timeout_multishot);
       }},
      {"READ_MULTISHOT",
       [](io_uring_sqe* s) {
         io_uring_prep_rw(op_read_multishot, s, unused_fd, nullptr, 0, 0);
         s->buf_group = 7;
       }},
      {"SEND_ZC", [](io_uring_sqe* s) { io_uring_prep_send_zc(s, unused_fd, nullptr, 0, 0, 0); }},
      {"SENDMSG_ZC", [](io_uring_sqe* s) { io_uring_prep_sendmsg_zc(s, unused_fd, nullptr, 0); }},
      {"MSG_RING", [](io_uring_sqe* s) { io_uring_prep_msg_ring(s, unused_fd, 0, 0, 0); }},
      {"LINK_TIMEOUT",
       [](io_uring_sqe* s) {
         static __kernel_timespec ts{1, 0};
         io_uring_prep_link_timeout(s, &ts, 0);
       }},
  };
  return all;
}

void expect_invalid_argument(const char* how, const char* name, const result<int>& r) {
  EXPECT_FALSE(r) << how << " " << name << ": " << describe(r);
  if (!r) {
    EXPECT_EQ(r.error(), std::errc::invalid_argument) << how << " " << name << ": " << r.error().message();
  }
}

// with_timeout keeps the operation's type: the refusal still comes first, on every backend.
TEST_P(AnyOpcodeAttack, WithTimeoutStillRefusesEveryUntrackableSqe) {
  for (const auto& u : untrackable_sqes()) {
    auto r = run([](void (*prep)(io_uring_sqe*)) -> task<result<int>> {
      co_return co_await with_timeout(any_opcode(prep), 5s);
    }(u.prep));
    expect_invalid_argument("with_timeout", u.name, r);
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

TEST_P(AnyOpcodeAttack, PlainAwaitRefusesEveryUntrackableSqe) {
  for (const auto& u : untrackable_sqes()) {
    auto r = run([](void (*prep)(io_uring_sqe*)) -> task<result<int>> { co_return co_await any_opcode(prep); }(u.prep));
    expect_invalid_argument("co_await", u.name, r);
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// The same inside when_all (each child wrapped in a task) and this_fiber-free combinators.
TEST_P(AnyOpcodeAttack, WhenAllChildrenRefuseEveryUntrackableSqe) {
  for (const auto& u : untrackable_sqes()) {
    auto both = run([](void (*prep)(io_uring_sqe*)) -> task<std::tuple<result<int>, result<int>>> {
      co_return co_await when_all(any_opcode(prep), with_timeout(any_opcode(prep), 5s));
    }(u.prep));
    expect_invalid_argument("when_all", u.name, std::get<0>(both));
    expect_invalid_argument("when_all+with_timeout", u.name, std::get<1>(both));
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// The sender form: set_error(invalid_argument), with and without a deadline.
TEST_P(AnyOpcodeAttack, SenderRefusesEveryUntrackableSqe) {
  for (const auto& u : untrackable_sqes()) {
    for (bool timed : {false, true}) {
      try {
        if (timed) (void)ex::sync_wait(ctx(), ex::as_sender(with_timeout(any_opcode(u.prep), 5s)));
        else (void)ex::sync_wait(ctx(), ex::any_opcode(u.prep));
        ADD_FAILURE() << u.name << (timed ? " (with_timeout)" : "") << ": completed without an error";
      } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), std::errc::invalid_argument)
            << u.name << (timed ? " (with_timeout)" : "") << ": " << e.code().message();
      }
    }
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// The table's order: a user_data comes before the backend and the probe.
TEST_P(AnyOpcodeAttack, RefusalOrderUserDataBeforeBackendAndProbe) {
  auto r = run([]() -> task<result<int>> {
    auto prep = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->opcode = 250;
      io_uring_sqe_set_data64(sqe, 7);
    };
    co_return co_await any_opcode(prep);
  }());
  expect_invalid_argument("co_await", "user_data with opcode 250", r);
}

// IORING_OP_LAST of the installed header (an opcode of newer kernels: READ_MULTISHOT
// here) and 255: refused, never run.
TEST_P(AnyOpcodeAttack, OpcodeLastAndMaxAreRefused) {
  for (unsigned op : {unsigned(IORING_OP_LAST), 255u}) {
    auto r = run([](unsigned op) -> task<result<int>> {
      auto prep = [op](io_uring_sqe* sqe) {
        io_uring_prep_nop(sqe);
        sqe->opcode = static_cast<__u8>(op);
      };
      co_return co_await with_timeout(any_opcode(prep), 5s);
    }(op));
    ASSERT_FALSE(r) << "opcode " << op << ": " << describe(r);
    if (op == op_read_multishot) {  // a multishot request: refused first, on every backend
      EXPECT_EQ(r.error(), std::errc::invalid_argument) << op << ": " << r.error().message();
    } else if (!on_uring()) {
      EXPECT_EQ(r.error(), std::errc::operation_not_supported) << op << ": " << r.error().message();
    } else {
      EXPECT_EQ(r.error(), std::errc::function_not_supported) << op << ": " << r.error().message();
    }
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// A flag bit no kernel defines: an error (ringio's or the kernel's), never a hang.
TEST_P(AnyOpcodeAttack, UnknownSqeFlagBitFailsCleanly) {
  for (bool timed : {false, true}) {
    auto r = run([](bool timed) -> task<result<int>> {
      auto prep = [](io_uring_sqe* sqe) {
        io_uring_prep_nop(sqe);
        sqe->flags |= 0x80;
      };
      if (timed) co_return co_await with_timeout(any_opcode(prep), 5s);
      co_return co_await any_opcode(prep);
    }(timed));
    ASSERT_FALSE(r) << describe(r);
    if (on_uring()) {
      EXPECT_EQ(r.error(), std::errc::invalid_argument) << r.error().message();
    }
  }
  // The loop goes on: a plain request after it runs (or is refused off io_uring).
  auto after = run([]() -> task<result<int>> {
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    co_return co_await with_timeout(any_opcode(nop), 5s);
  }());
  if (on_uring()) {
    EXPECT_TRUE(after) << describe(after);
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// Fields the kernel checks itself: a fixed file without a table, a bogus personality.
TEST_P(AnyOpcodeAttack, FixedFileWithoutTableAndBogusPersonalityFailInTheKernel) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  auto r = run([]() -> task<std::tuple<result<int>, result<int>>> {
    static std::array<char, 8> buf{};
    auto fixed = [](io_uring_sqe* sqe) {
      io_uring_prep_read(sqe, 3, buf.data(), buf.size(), 0);
      sqe->flags |= IOSQE_FIXED_FILE;
    };
    auto personality = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->personality = 0xfff0;
    };
    auto a = co_await with_timeout(any_opcode(fixed), 5s);
    auto b = co_await with_timeout(any_opcode(personality), 5s);
    co_return std::tuple{a, b};
  }());
  EXPECT_FALSE(std::get<0>(r)) << describe(std::get<0>(r));
  EXPECT_FALSE(std::get<1>(r)) << describe(std::get<1>(r));
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// ---- stops before the start win over every refusal ----

// docs/any_opcode.md: "A stop requested before the start sends nothing and gives
// operation_canceled (set_stopped() for the sender), on every backend and before any of
// the refusals". The sender of an operation given a stopped token with .with_stop().
TEST_P(AnyOpcodeAttack, SenderExplicitStopBeforeStartWinsOverRefusal) {
  std::stop_source stop;
  stop.request_stop();
  auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
  auto user_data = [](io_uring_sqe* sqe) {
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, 9);
  };
  for (int which = 0; which < 2; ++which) {
    const char* name = which == 0 ? "nop" : "user_data set";
    try {
      std::optional<std::tuple<int>> r;
      if (which == 0) r = ex::sync_wait(ctx(), ex::as_sender(any_opcode(nop).with_stop(stop.get_token())));
      else r = ex::sync_wait(ctx(), ex::as_sender(any_opcode(user_data).with_stop(stop.get_token())));
      EXPECT_FALSE(r.has_value()) << name << ": completed with a value instead of set_stopped";
    } catch (const std::system_error& e) {
      ADD_FAILURE() << name << ": set_error(" << e.code().message() << ") instead of set_stopped";
    }
  }
}

// The environment's token, already stopped: set_stopped on every backend.
TEST_P(AnyOpcodeAttack, SenderEnvironmentStopBeforeStartWinsOverRefusal) {
  std::stop_source stop;
  stop.request_stop();
  auto user_data = [](io_uring_sqe* sqe) {
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, 9);
  };
  try {
    auto r = ex::sync_wait(ctx(), with_token(ex::any_opcode(user_data), stop.get_token()));
    EXPECT_FALSE(r.has_value());
  } catch (const std::system_error& e) {
    ADD_FAILURE() << "set_error(" << e.code().message() << ") instead of set_stopped";
  }
}

// Task form: the explicit token and the task's inherited one (a stopped scope).
TEST_P(AnyOpcodeAttack, TaskStopBeforeStartWinsOverRefusal) {
  pipe_fds p;
  write_text(p.write_end, "kept");
  auto r = run([](int fd) -> task<std::tuple<result<int>, result<int>, result<int>>> {
    std::stop_source stop;
    stop.request_stop();
    auto user_data = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, 9);
    };
    auto a = co_await any_opcode(user_data).with_stop(stop.get_token());
    result<int> b = unexpected(std::errc::no_message);
    result<int> c = unexpected(std::errc::no_message);
    {
      static std::array<char, 8> buf{};
      scope s;
      s.request_stop();
      s.spawn([](result<int>& out) -> task<void> {
        auto ud = [](io_uring_sqe* sqe) {
          io_uring_prep_nop(sqe);
          io_uring_sqe_set_data64(sqe, 9);
        };
        out = co_await any_opcode(ud);
      }(b));
      s.spawn([](int fd, result<int>& out) -> task<void> {
        auto rd = [fd](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
        out = co_await with_timeout(any_opcode(rd), 5s);
      }(fd, c));
      co_await s.join();
    }
    co_return std::tuple{a, b, c};
  }(p.read_end));
  for (int i = 0; i < 3; ++i) {
    const result<int>& x = i == 0 ? std::get<0>(r) : i == 1 ? std::get<1>(r) : std::get<2>(r);
    EXPECT_FALSE(x) << i << ": " << describe(x);
    if (!x) {
      EXPECT_EQ(x.error(), std::errc::operation_canceled) << i << ": " << x.error().message();
    }
  }
  EXPECT_EQ(drain(p.read_end), "kept");
}

// ---- requests aimed at other requests ----

// A single-shot POLL_ADD through the hatch, awaited by a child task while the parent
// holds the operation (its address is its user_data, docs: op_base.hpp). Returns the
// results of the poll and of the request `aim` made at it.
struct aimed_results {
  result<int> target = unexpected(std::errc::no_message);
  result<int> aimed = unexpected(std::errc::no_message);
  int target_completions = 0;
};

// A POLL_REMOVE that asks to update a single-shot poll into a multishot one: whether
// ringio refuses it or the kernel keeps the poll single-shot, the poll completes once
// and nothing reaches its operation after it completed (ASan watches the frame).
TEST_P(AnyOpcodeAttack, PollUpdateCannotTurnAHatchPollMultishot) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds p;
  auto r = run([](int rfd, int wfd) -> task<aimed_results> {
    aimed_results out;
    auto poll_prep = [rfd](io_uring_sqe* sqe) { io_uring_prep_poll_add(sqe, rfd, POLLIN); };
    auto poll = any_opcode(poll_prep);
    scope s;
    s.spawn([](decltype(poll)& op, aimed_results& out) -> task<void> {
      out.target = co_await op;
      ++out.target_completions;
    }(poll, out));
    (void)co_await sleep_for(5ms);  // the poll is in the kernel
    const __u64 target = user_data_of(poll);
    auto update = [target](io_uring_sqe* sqe) {
      io_uring_prep_poll_update(sqe, target, 0, POLLIN, IORING_POLL_UPDATE_EVENTS | IORING_POLL_ADD_MULTI);
    };
    out.aimed = co_await with_timeout(any_opcode(update), 5s);
    // Two readiness edges: a multishot poll would post a CQE for each.
    (void)::write(wfd, "a", 1);
    (void)co_await sleep_for(5ms);
    (void)::write(wfd, "b", 1);
    (void)co_await sleep_for(5ms);
    co_await s.join();
    // Drain the pipe so a poll left armed sees no more edges, then let the loop run.
    char buf[8];
    (void)::read(rfd, buf, sizeof buf);
    (void)co_await sleep_for(5ms);
    co_return out;
  }(p.read_end, p.write_end));
  if (!r.aimed) {
    EXPECT_EQ(r.aimed.error(), std::errc::invalid_argument) << r.aimed.error().message();
  }
  EXPECT_TRUE(r.target) << describe(r.target);
  EXPECT_EQ(r.target_completions, 1);
}

// A POLL_REMOVE that rewrites another request's user_data (IORING_POLL_UPDATE_USER_DATA):
// ringio owns user_data (it names the operation), so the update must be refused; the
// poll must still complete as itself.
TEST_P(AnyOpcodeAttack, PollUpdateCannotRewriteAHatchPollsUserData) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds p;
  auto r = run([](int rfd, int wfd) -> task<aimed_results> {
    aimed_results out;
    auto poll_prep = [rfd](io_uring_sqe* sqe) { io_uring_prep_poll_add(sqe, rfd, POLLIN); };
    auto poll = any_opcode(poll_prep);
    scope s;
    s.spawn([](decltype(poll)& op, aimed_results& out) -> task<void> {
      out.target = co_await with_timeout(std::move(op), 2s);
      ++out.target_completions;
    }(poll, out));
    (void)co_await sleep_for(5ms);
    const __u64 target = user_data_of(poll);
    auto update = [target](io_uring_sqe* sqe) {
      io_uring_prep_poll_update(sqe, target, 0x5eed0, POLLIN, IORING_POLL_UPDATE_USER_DATA);
    };
    out.aimed = co_await with_timeout(any_opcode(update), 5s);
    (void)::write(wfd, "a", 1);
    co_await s.join();
    co_return out;
  }(p.read_end, p.write_end));
  expect_invalid_argument("co_await", "poll update of user_data", r.aimed);
  EXPECT_EQ(r.target_completions, 1);
}

// A plain POLL_REMOVE of a hatch poll: the poll completes as cancelled, the remove with 0.
TEST_P(AnyOpcodeAttack, PollRemoveOfAHatchPollCompletesIt) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds p;
  auto r = run([](int rfd) -> task<aimed_results> {
    aimed_results out;
    auto poll_prep = [rfd](io_uring_sqe* sqe) { io_uring_prep_poll_add(sqe, rfd, POLLIN); };
    auto poll = any_opcode(poll_prep);
    scope s;
    s.spawn([](decltype(poll)& op, aimed_results& out) -> task<void> {
      out.target = co_await op;
      ++out.target_completions;
    }(poll, out));
    (void)co_await sleep_for(5ms);
    const __u64 target = user_data_of(poll);
    auto remove = [target](io_uring_sqe* sqe) { io_uring_prep_poll_remove(sqe, target); };
    out.aimed = co_await with_timeout(any_opcode(remove), 5s);
    co_await s.join();
    co_return out;
  }(p.read_end));
  EXPECT_TRUE(r.aimed) << describe(r.aimed);
  ASSERT_FALSE(r.target) << describe(r.target);
  EXPECT_EQ(r.target.error(), std::errc::operation_canceled) << r.target.error().message();
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// TIMEOUT_REMOVE aimed at an hour-long hatch timeout (removed: cancelled), and a
// TIMEOUT_REMOVE with IORING_TIMEOUT_UPDATE shortening another one (it expires: ETIME).
TEST_P(AnyOpcodeAttack, TimeoutRemoveAndUpdateOfHatchTimeouts) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  auto r = run([]() -> task<std::tuple<aimed_results, aimed_results>> {
    std::tuple<aimed_results, aimed_results> out;
    __kernel_timespec hour{3600, 0};
    __kernel_timespec soon{0, 1'000'000};
    auto hour_prep = [&hour](io_uring_sqe* sqe) { io_uring_prep_timeout(sqe, &hour, 0, 0); };
    auto removed = any_opcode(hour_prep);
    auto updated = any_opcode(hour_prep);
    scope s;
    s.spawn([](decltype(removed)& op, aimed_results& out) -> task<void> {
      out.target = co_await op;
      ++out.target_completions;
    }(removed, std::get<0>(out)));
    s.spawn([](decltype(updated)& op, aimed_results& out) -> task<void> {
      out.target = co_await op;
      ++out.target_completions;
    }(updated, std::get<1>(out)));
    (void)co_await sleep_for(5ms);
    const __u64 a = user_data_of(removed);
    const __u64 b = user_data_of(updated);
    auto remove = [a](io_uring_sqe* sqe) { io_uring_prep_timeout_remove(sqe, a, 0); };
    auto update = [b, &soon](io_uring_sqe* sqe) { io_uring_prep_timeout_update(sqe, &soon, b, 0); };
    std::get<0>(out).aimed = co_await with_timeout(any_opcode(remove), 5s);
    std::get<1>(out).aimed = co_await with_timeout(any_opcode(update), 5s);
    co_await s.join();
    co_return out;
  }());
  auto& [removed, updated] = r;
  EXPECT_TRUE(removed.aimed) << describe(removed.aimed);
  ASSERT_FALSE(removed.target) << describe(removed.target);
  EXPECT_EQ(removed.target.error(), std::errc::operation_canceled) << removed.target.error().message();
  EXPECT_TRUE(updated.aimed) << describe(updated.aimed);
  ASSERT_FALSE(updated.target) << describe(updated.target);
  EXPECT_EQ(updated.target.error(), std::errc::stream_timeout) << updated.target.error().message();
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// ASYNC_CANCEL aimed at another hatch request's user_data: that one completes cancelled.
TEST_P(AnyOpcodeAttack, AsyncCancelOfAnotherHatchReadCancelsIt) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds p;
  std::array<char, 16> buf{};
  auto r = run([](int rfd, std::array<char, 16>& buf) -> task<aimed_results> {
    aimed_results out;
    auto read_prep = [rfd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, rfd, buf.data(), buf.size(), ~0ULL); };
    auto read = any_opcode(read_prep);
    scope s;
    s.spawn([](decltype(read)& op, aimed_results& out) -> task<void> {
      out.target = co_await op;
      ++out.target_completions;
    }(read, out));
    (void)co_await sleep_for(5ms);
    const __u64 target = user_data_of(read);
    auto cancel = [target](io_uring_sqe* sqe) { io_uring_prep_cancel64(sqe, target, 0); };
    out.aimed = co_await with_timeout(any_opcode(cancel), 5s);
    co_await s.join();
    co_return out;
  }(p.read_end, buf));
  EXPECT_TRUE(r.aimed) << describe(r.aimed);
  ASSERT_FALSE(r.target) << describe(r.target);
  EXPECT_EQ(r.target.error(), std::errc::operation_canceled) << r.target.error().message();
  write_text(p.write_end, "intact");
  EXPECT_EQ(drain(p.read_end), "intact");
}

// ASYNC_CANCEL with IORING_ASYNC_CANCEL_ANY reaches ringio's own requests (documented);
// the loop must stay usable: a sleep still ends, a stop() from another thread still
// wakes the sleeping loop (its wake-up read is one of those requests).
TEST(AnyOpcodeAttackUring, CancelAnyLeavesTheLoopWakeable) {
  std::optional<io_context> ctx;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "io_uring cannot start here: " << e.what();
  }
  pipe_fds rescue;  // a read the watchdog can complete to wake a loop deaf to stop()
  result<int> cancel_any = unexpected(std::errc::no_message);
  result<void> slept = unexpected(std::errc::no_message);
  sync_wait(*ctx, [](result<int>& cancel_any, result<void>& slept) -> task<void> {
    auto any = [](io_uring_sqe* sqe) {
      io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
    };
    cancel_any = co_await with_timeout(any_opcode(any), 5s);
    slept = co_await sleep_for(10ms);
  }(cancel_any, slept));
  EXPECT_TRUE(cancel_any) << describe(cancel_any);  // >= 0: how many it cancelled
  EXPECT_TRUE(slept) << (slept ? "" : slept.error().message());
  // The loop sleeps in the kernel with a read of an empty pipe in flight; stop() comes
  // from another thread.
  std::array<char, 8> buf{};
  result<int> rescued = unexpected(std::errc::no_message);
  ctx->spawn([](int fd, std::array<char, 8>& buf, result<int>& out) -> task<void> {
    auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
    out = co_await any_opcode(rd);
  }(rescue.read_end, buf, rescued));
  std::thread stopper([&ctx] {
    std::this_thread::sleep_for(100ms);
    ctx->stop();
  });
  watchdog wd(10s, [&rescue] { (void)::write(rescue.write_end, "x", 1); });
  ctx->run();
  stopper.join();
  EXPECT_FALSE(wd.disarm()) << "stop() from another thread did not wake the loop after a CANCEL_ANY";
  ctx.reset();  // ends the read if it is still in flight
}

// MSG_RING aimed at this loop's ring and at another loop's: refused, nothing delivered
// (the other loop goes on running its own requests).
TEST(AnyOpcodeAttackUring, MsgRingToThisOrAnotherRingIsRefused) {
  std::optional<io_context> ctx;
  std::optional<io_context> other;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true});
    other.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "io_uring cannot start here: " << e.what();
  }
  auto r = sync_wait(*ctx, [](int own_fd, int other_fd) -> task<std::tuple<result<int>, result<int>>> {
    auto to_own = [own_fd](io_uring_sqe* sqe) { io_uring_prep_msg_ring(sqe, own_fd, 7, 0x1234, 0); };
    auto to_other = [other_fd](io_uring_sqe* sqe) { io_uring_prep_msg_ring(sqe, other_fd, 7, 0x1234, 0); };
    auto a = co_await with_timeout(any_opcode(to_own), 5s);
    auto b = co_await with_timeout(any_opcode(to_other), 5s);
    co_return std::tuple{a, b};
  }(ctx->ring_fd(), other->ring_fd()));
  expect_invalid_argument("co_await", "MSG_RING to this ring", std::get<0>(r));
  expect_invalid_argument("co_await", "MSG_RING to another ring", std::get<1>(r));
  auto still = sync_wait(*other, []() -> task<result<int>> {
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    (void)co_await sleep_for(5ms);
    co_return co_await any_opcode(nop);
  }());
  EXPECT_TRUE(still) << describe(still);
}

// ---- preparers and transforms that throw ----

TEST_P(AnyOpcodeAttack, PreparerThatThrowsStartsNothing) {
  pipe_fds p;
  write_text(p.write_end, "kept");
  auto thrown = run([](int fd) -> task<bool> {
    static std::array<char, 8> buf{};
    auto prep = [fd](io_uring_sqe* sqe) {
      io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL);
      throw std::runtime_error("prep failed");
    };
    try {
      (void)co_await with_timeout(any_opcode(prep), 5s);
    } catch (const std::runtime_error&) {
      co_return true;
    }
    co_return false;
  }(p.read_end));
  EXPECT_TRUE(thrown);
  auto throwing = [](io_uring_sqe*) { throw std::runtime_error("prep failed"); };
  EXPECT_THROW((void)ex::any_opcode(throwing), std::runtime_error);
  EXPECT_EQ(drain(p.read_end), "kept");
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// A transform that throws: the exception reaches the awaiting task, after the CQE (the
// read took its bytes once), and the loop goes on.
TEST_P(AnyOpcodeAttack, TransformThatThrowsReachesTheTaskAfterTheCqe) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds p;
  write_text(p.write_end, "abc");
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<std::string> {
    auto prep = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
    auto boom = [](int) -> int { throw std::runtime_error("transform failed"); };
    std::string what;
    try {
      (void)co_await with_timeout(any_opcode(prep, boom), 5s);
      what = "no exception";
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    auto after = co_await any_opcode(nop);
    if (!after) what += " / nop after: " + after.error().message();
    co_return what;
  }(p.read_end, buf));
  EXPECT_EQ(r, "transform failed");
  EXPECT_EQ(std::string(buf.data(), 3), "abc");
  EXPECT_EQ(drain(p.read_end), "");
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// A transform that throws beside a read that never completes: try_when_all counts the
// exception as a failure, stops the read, waits for it and rethrows; when_any with the
// throwing request as the winner rethrows after the read was cancelled.
TEST_P(AnyOpcodeAttack, TransformThatThrowsStopsItsSiblings) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds p;
  std::array<char, 16> buf{};
  watchdog wd(30s, [&p] { (void)::write(p.write_end, "!", 1); });
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<std::tuple<std::string, std::string>> {
    std::tuple<std::string, std::string> out{"no exception", "no exception"};
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    auto boom = [](int) -> int { throw std::runtime_error("transform failed"); };
    auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
    try {
      (void)co_await try_when_all(any_opcode(rd), any_opcode(nop, boom));
    } catch (const std::runtime_error& e) {
      std::get<0>(out) = e.what();
    }
    try {
      (void)co_await when_any(any_opcode(rd), any_opcode(nop, boom));
    } catch (const std::runtime_error& e) {
      std::get<1>(out) = e.what();
    }
    co_return out;
  }(p.read_end, buf));
  EXPECT_FALSE(wd.disarm()) << "the sibling read was not stopped";
  EXPECT_EQ(std::get<0>(r), "transform failed");
  EXPECT_EQ(std::get<1>(r), "transform failed");
  EXPECT_EQ(ctx().in_flight(), 0u);
  write_text(p.write_end, "intact");
  EXPECT_EQ(drain(p.read_end), "intact");
}

// A refused sender started before a read, in exec::when_any and when_all: the read is
// stopped before it starts (nothing sent) and the refusal is the result.
TEST_P(AnyOpcodeAttack, RefusedSenderFirstStopsTheReadBeforeItStarts) {
  pipe_fds p;
  write_text(p.write_end, "kept");
  std::array<char, 16> buf{};
  auto rd = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, p.read_end, buf.data(), buf.size(), ~0ULL); };
  auto refused = [](io_uring_sqe* sqe) {
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, 1);
  };
  for (int which = 0; which < 2; ++which) {
    try {
      if (which == 0) (void)ex::sync_wait(ctx(), ex::when_all(ex::any_opcode(refused), ex::any_opcode(rd)));
      else (void)ex::sync_wait(ctx(), ex::when_any(ex::any_opcode(refused), ex::any_opcode(rd)));
      ADD_FAILURE() << (which == 0 ? "when_all" : "when_any") << ": no error";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::invalid_argument) << e.code().message();
    }
  }
  EXPECT_EQ(drain(p.read_end), "kept") << "a read stopped before its start took data";
}

// ---- stops in flight ----

// IOSQE_ASYNC: the read blocks in an io-wq worker; its cancel interrupts it (-EINTR),
// which is still operation_canceled (timed_out under a deadline), and the pipe keeps
// what is written afterwards.
TEST_P(AnyOpcodeAttack, StopOfAnAsyncWorkerReadIsACancellation) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds p;
  std::array<char, 16> buf{};
  auto r = run([](int fd, std::array<char, 16>& buf) -> task<std::tuple<result<int>, result<int>>> {
    auto prep = [fd, &buf](io_uring_sqe* sqe) {
      io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL);
      sqe->flags |= IOSQE_ASYNC;
    };
    std::stop_source stop;
    scope timer(std::stop_token{});
    timer.spawn([](std::stop_source& stop) -> task<void> {
      (void)co_await sleep_for(30ms);
      stop.request_stop();
    }(stop));
    auto stopped = co_await any_opcode(prep).with_stop(stop.get_token());
    co_await timer.join();
    auto timed = co_await with_timeout(any_opcode(prep), 30ms);
    co_return std::tuple{stopped, timed};
  }(p.read_end, buf));
  auto& [stopped, timed] = r;
  ASSERT_FALSE(stopped) << describe(stopped);
  EXPECT_EQ(stopped.error(), std::errc::operation_canceled) << stopped.error().message();
  ASSERT_FALSE(timed) << describe(timed);
  EXPECT_EQ(timed.error(), std::errc::timed_out) << timed.error().message();
  EXPECT_EQ(ctx().in_flight(), 0u);
  write_text(p.write_end, "after");
  EXPECT_EQ(drain(p.read_end), "after");
}

// What a request bounded at 50 ms gave, and after how long.
struct bounded_outcome {
  result<int> r = unexpected(std::errc::no_message);
  long ms = 0;
};

// Runs `request` (returning result<int>, on the test's thread) while a rescuer, should it still run after 10 s, calls
// `unblock` every 500 ms until it ends.
template <class Request, class Unblock>
bounded_outcome run_with_rescuer(Request request, Unblock unblock) {
  std::atomic<bool> finished{false};
  std::thread rescuer([&] {
    for (int i = 0; i < 100 && !finished; ++i) std::this_thread::sleep_for(100ms);
    while (!finished) {
      unblock();
      std::this_thread::sleep_for(500ms);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  bounded_outcome out;
  out.r = request();
  out.ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
  finished = true;
  rescuer.join();
  return out;
}

void expect_timed_out_soon(const char* name, const bounded_outcome& o) {
  EXPECT_FALSE(o.r) << name << ": " << describe(o.r) << " after " << o.ms << " ms";
  if (!o.r) {
    EXPECT_EQ(o.r.error(), std::errc::timed_out) << name << ": " << o.r.error().message() << " after " << o.ms << " ms";
  }
  EXPECT_LT(o.ms, 5000) << name << ": a 50 ms deadline ended it only after " << o.ms << " ms";
}

// A deadline on the operation itself (a linked timeout) ends an IOSQE_ASYNC read
// blocked in a worker. (A SPLICE from an empty pipe or an open of a FIFO blocked in a
// worker is not reached by the link's cancel on Linux 6.18, as docs/any_opcode.md
// says: those are bounded with with_timeout(task, d), the test below.)
TEST_P(AnyOpcodeAttack, DeadlineEndsAnAsyncWorkerRead) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds src;
  std::array<char, 16> buf{};
  auto async_read = [&](io_uring_sqe* sqe) {
    io_uring_prep_read(sqe, src.read_end, buf.data(), buf.size(), ~0ULL);
    sqe->flags |= IOSQE_ASYNC;
  };
  auto read = run_with_rescuer(
      [&] {
        return run([&]() -> task<result<int>> { co_return co_await with_timeout(any_opcode(async_read), 50ms); }());
      },
      [&] { (void)::write(src.write_end, "r", 1); });
  expect_timed_out_soon("IOSQE_ASYNC read", read);
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// The same requests in a task bounded by with_timeout(task, d) (the remedy files.md
// gives for opens): the task's stop cancels them (timed_out).
TEST_P(AnyOpcodeAttack, TaskDeadlineEndsRequestsBlockedInAWorker) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds from;
  pipe_fds to;
  auto splice = [&](io_uring_sqe* sqe) { io_uring_prep_splice(sqe, from.read_end, -1, to.write_end, -1, 64, 0); };
  auto in_task = [](auto& prep) -> task<result<int>> { co_return co_await any_opcode(prep); };
  auto spliced = run_with_rescuer(
      [&] { return run([&]() -> task<result<int>> { co_return co_await with_timeout(in_task(splice), 50ms); }()); },
      [&] { (void)::write(from.write_end, "r", 1); });
  expect_timed_out_soon("SPLICE from an empty pipe", spliced);

  const std::string fifo = ::testing::TempDir() + "ringio-any-attack-fifo2-" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto open_fifo = [&](io_uring_sqe* sqe) {
    io_uring_prep_openat(sqe, AT_FDCWD, fifo.c_str(), O_RDONLY | O_TRUNC | O_CLOEXEC, 0);
  };
  auto opened = run_with_rescuer(
      [&] { return run([&]() -> task<result<int>> { co_return co_await with_timeout(in_task(open_fifo), 50ms); }()); },
      [&] {
        int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        std::this_thread::sleep_for(100ms);
        if (fd >= 0) ::close(fd);
      });
  ::unlink(fifo.c_str());
  if (opened.r) ::close(*opened.r);
  expect_timed_out_soon("openat of a FIFO", opened);
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// when_any of two hatch reads: the one with data wins, the other is cancelled and took
// nothing; with_timeout(task) around a hatch read reports timed_out.
TEST_P(AnyOpcodeAttack, WhenAnyAndTaskTimeoutCancelTheLoser) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  pipe_fds a;
  pipe_fds b;
  write_text(a.write_end, "A");
  std::array<char, 16> buf_a{};
  std::array<char, 16> buf_b{};
  auto r = run([](int fa, int fb, std::array<char, 16>& ba,
                  std::array<char, 16>& bb) -> task<std::tuple<std::size_t, result<int>>> {
    auto reader = [](int fd, std::array<char, 16>& buf) -> task<result<int>> {
      auto prep = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
      co_return co_await any_opcode(prep);
    };
    auto first = reader(fb, bb);
    auto second = reader(fa, ba);
    auto won = co_await when_any(std::move(first), std::move(second));
    auto timed = co_await with_timeout(reader(fb, bb), 20ms);
    co_return std::tuple{won.index(), timed};
  }(a.read_end, b.read_end, buf_a, buf_b));
  EXPECT_EQ(std::get<0>(r), 1u);
  ASSERT_FALSE(std::get<1>(r)) << describe(std::get<1>(r));
  EXPECT_EQ(std::get<1>(r).error(), std::errc::timed_out) << std::get<1>(r).error().message();
  EXPECT_EQ(ctx().in_flight(), 0u);
  write_text(b.write_end, "B intact");
  EXPECT_EQ(drain(b.read_end), "B intact");
}

// A stop from another thread racing the data: every byte is either read (the cancel
// lost) or still in the pipe (the cancel won). Task and sender forms; the seed is printed.
TEST_P(AnyOpcodeAttack, CrossThreadStopRacingDataLosesNothing) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  pipe_fds p;
  std::array<char, 4> buf{};
  int read_bytes = 0;
  int left_bytes = 0;
  int canceled = 0;
  int rounds_done = 0;
  const int rounds = under_sanitizer ? 150 : 500;
  for (int i = 0; i < rounds; ++i) {
    std::stop_source stop;
    const int delay_us = static_cast<int>(rng() % 300);
    const bool stop_first = (rng() & 1) != 0;
    std::thread racer([&, delay_us, stop_first] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      if (stop_first) stop.request_stop();
      (void)::write(p.write_end, "x", 1);
      if (!stop_first) stop.request_stop();
    });
    result<int> got = unexpected(std::errc::no_message);
    const bool sender = (i % 2) == 1;
    auto prep = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, p.read_end, buf.data(), 1, ~0ULL); };
    if (!sender) {
      got = run([](decltype(prep)& prep, std::stop_token t) -> task<result<int>> {
        co_return co_await with_timeout(any_opcode(prep).with_stop(std::move(t)), 10s);
      }(prep, stop.get_token()));
    } else {
      try {
        auto v = ex::sync_wait(ctx(), with_token(ex::any_opcode(prep), stop.get_token()));
        if (v) got = std::get<0>(*v);
        else got = unexpected(std::errc::operation_canceled);
      } catch (const std::system_error& e) {
        got = unexpected(e.code());
      }
    }
    racer.join();
    const std::string left = drain(p.read_end);
    ::fcntl(p.read_end, F_SETFL, ::fcntl(p.read_end, F_GETFL) & ~O_NONBLOCK);
    if (got) {
      EXPECT_EQ(*got, 1) << "round " << i;
      EXPECT_EQ(left, "") << "round " << i;
      read_bytes += *got;
    } else {
      EXPECT_EQ(got.error(), std::errc::operation_canceled) << "round " << i << ": " << got.error().message();
      EXPECT_EQ(left, "x") << "round " << i << ": a cancelled read lost its byte";
      ++canceled;
    }
    left_bytes += static_cast<int>(left.size());
    ++rounds_done;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_EQ(read_bytes + left_bytes, rounds_done) << "one byte was written per round";
  EXPECT_EQ(ctx().in_flight(), 0u);
  std::printf("read %d, cancelled %d\n", read_bytes, canceled);
}

// A refused sender beside a read that never completes: exec::when_all and when_any
// complete with the refusal after stopping the read and waiting for it.
TEST_P(AnyOpcodeAttack, RefusedSenderStopsItsSiblingsAndWaits) {
  pipe_fds p;
  std::array<char, 16> buf{};
  auto rd = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, p.read_end, buf.data(), buf.size(), ~0ULL); };
  auto refused = [](io_uring_sqe* sqe) {
    io_uring_prep_nop(sqe);
    sqe->flags |= IOSQE_IO_DRAIN;
  };
  for (int which = 0; which < 2; ++which) {
    try {
      if (which == 0) (void)ex::sync_wait(ctx(), ex::when_all(ex::any_opcode(rd), ex::any_opcode(refused)));
      else (void)ex::sync_wait(ctx(), ex::when_any(ex::any_opcode(rd), ex::any_opcode(refused)));
      ADD_FAILURE() << (which == 0 ? "when_all" : "when_any") << ": no error";
    } catch (const std::system_error& e) {
      // Off io_uring the read is refused too (operation_not_supported), maybe first.
      if (on_uring()) {
        EXPECT_EQ(e.code(), std::errc::invalid_argument) << e.code().message();
      }
    }
    EXPECT_EQ(ctx().in_flight(), 0u);
  }
  write_text(p.write_end, "intact");
  EXPECT_EQ(drain(p.read_end), "intact");
}

// A kernel TIMEOUT request under with_timeout: the linked timeout ends it (timed_out),
// and an hour-long one stopped in flight is cancelled.
TEST_P(AnyOpcodeAttack, KernelTimeoutUnderADeadlineAndAStop) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  auto r = run([]() -> task<std::tuple<result<int>, result<int>>> {
    __kernel_timespec hour{3600, 0};
    auto prep = [&hour](io_uring_sqe* sqe) { io_uring_prep_timeout(sqe, &hour, 0, 0); };
    auto timed = co_await with_timeout(any_opcode(prep), 20ms);
    std::stop_source stop;
    scope timer(std::stop_token{});
    timer.spawn([](std::stop_source& stop) -> task<void> {
      (void)co_await sleep_for(20ms);
      stop.request_stop();
    }(stop));
    auto stopped = co_await any_opcode(prep).with_stop(stop.get_token());
    co_await timer.join();
    co_return std::tuple{timed, stopped};
  }());
  auto& [timed, stopped] = r;
  ASSERT_FALSE(timed) << describe(timed);
  EXPECT_EQ(timed.error(), std::errc::timed_out) << timed.error().message();
  ASSERT_FALSE(stopped) << describe(stopped);
  EXPECT_EQ(stopped.error(), std::errc::operation_canceled) << stopped.error().message();
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// A transform whose value is move-only, in both forms.
TEST_P(AnyOpcodeAttack, MoveOnlyTransformValue) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
  auto boxed = [](int res) noexcept { return std::make_unique<int>(res + 7); };
  auto r = run([](decltype(nop)& nop, decltype(boxed)& boxed) -> task<result<std::unique_ptr<int>>> {
    co_return co_await with_timeout(any_opcode(nop, boxed), 5s);
  }(nop, boxed));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(**r, 7);
  auto v = ex::sync_wait(ctx(), ex::any_opcode(nop, boxed));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*std::get<0>(*v), 7);
}

// Thousands of reads that never complete, over a cap of 8, stopped together: every one
// completes as cancelled, promptly.
TEST(AnyOpcodeAttackUring, ThousandsOfIdleReadsOverTheCapStoppedTogether) {
  auto ctx = capped_uring(8);
  if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
  pipe_fds idle;
  constexpr int n = 4000;
  std::vector<std::array<char, 4>> bufs(n);
  std::vector<result<int>> results(n, unexpected(std::errc::no_message));
  watchdog wd(60s, [&idle] { (void)::write(idle.write_end, std::string(4096, 'i').data(), 4096); });
  sync_wait(*ctx, [](int fd, std::vector<std::array<char, 4>>& bufs, std::vector<result<int>>& results) -> task<void> {
    scope s;
    for (int i = 0; i < n; ++i) {
      s.spawn([](int fd, std::array<char, 4>& buf, result<int>& out) -> task<void> {
        auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 1, ~0ULL); };
        out = co_await any_opcode(rd);
      }(fd, bufs[i], results[i]));
    }
    (void)co_await sleep_for(20ms);
    s.request_stop();
    co_await s.join();
  }(idle.read_end, bufs, results));
  EXPECT_FALSE(wd.disarm()) << "stopping the reads did not end them";
  int canceled = 0;
  for (const auto& r : results)
    if (!r && r.error() == std::errc::operation_canceled) ++canceled;
  EXPECT_EQ(canceled, n);
  EXPECT_EQ(ctx->in_flight(), 0u);
}

// this_fiber::await: a fiber's stop before the start wins over the refusal, a refusal
// is invalid_argument, a stop in flight cancels and waits (the pipe keeps its data).
TEST_P(AnyOpcodeAttack, FiberAwaitObeysTheSameRules) {
  pipe_fds p;
  struct outcome {
    result<int> stopped_refused = unexpected(std::errc::no_message);
    result<int> refused = unexpected(std::errc::no_message);
    result<int> nop = unexpected(std::errc::no_message);
    result<int> stopped_in_flight = unexpected(std::errc::no_message);
  };
  auto r = run([](int fd) -> task<outcome> {
    outcome out;
    static std::array<char, 8> buf{};
    {
      scope s;
      s.request_stop();
      spawn_fiber(s, [&out] {
        auto ud = [](io_uring_sqe* sqe) {
          io_uring_prep_nop(sqe);
          io_uring_sqe_set_data64(sqe, 5);
        };
        out.stopped_refused = this_fiber::await(any_opcode(ud));
      });
      co_await s.join();
    }
    {
      scope s;
      spawn_fiber(s, [&out, fd] {
        auto ud = [](io_uring_sqe* sqe) {
          io_uring_prep_nop(sqe);
          io_uring_sqe_set_data64(sqe, 5);
        };
        out.refused = this_fiber::await(any_opcode(ud));
        auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
        out.nop = this_fiber::await(with_timeout(any_opcode(nop), 5s));
        auto rd = [fd](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
        out.stopped_in_flight = this_fiber::await(any_opcode(rd));
      });
      (void)co_await sleep_for(20ms);
      s.request_stop();
      co_await s.join();
    }
    co_return out;
  }(p.read_end));
  ASSERT_FALSE(r.stopped_refused) << describe(r.stopped_refused);
  EXPECT_EQ(r.stopped_refused.error(), std::errc::operation_canceled) << r.stopped_refused.error().message();
  expect_invalid_argument("this_fiber::await", "user_data", r.refused);
  ASSERT_FALSE(r.stopped_in_flight) << describe(r.stopped_in_flight);
  if (on_uring()) {
    EXPECT_TRUE(r.nop) << describe(r.nop);
    EXPECT_EQ(r.stopped_in_flight.error(), std::errc::operation_canceled) << r.stopped_in_flight.error().message();
  } else {
    EXPECT_EQ(r.stopped_in_flight.error(), std::errc::operation_not_supported) << r.stopped_in_flight.error().message();
  }
  write_text(p.write_end, "intact");
  EXPECT_EQ(drain(p.read_end), "intact");
}

// Two stops at once from two threads: the operation's own token (.with_stop) and its
// scope's. The request is cancelled once and completes once; the seed is printed.
TEST_P(AnyOpcodeAttack, TwoStopsFromTwoThreadsAtOnce) {
  if (!on_uring()) GTEST_SKIP() << "io_uring only: the other backends refuse every request";
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  pipe_fds p;
  std::array<char, 4> buf{};
  const int rounds = under_sanitizer ? 100 : 300;
  for (int i = 0; i < rounds; ++i) {
    std::stop_source own;
    std::stop_source parent;
    std::atomic<int> ready{0};
    const int d1 = static_cast<int>(rng() % 200);
    const int d2 = static_cast<int>(rng() % 200);
    std::thread a([&, d1] {
      ready.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(d1));
      own.request_stop();
    });
    std::thread b([&, d2] {
      ready.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(d2));
      parent.request_stop();
    });
    int completions = 0;
    auto got = run([](int fd, std::array<char, 4>& buf, std::stop_token own, std::stop_token parent,
                      int& completions) -> task<result<int>> {
      result<int> out = unexpected(std::errc::no_message);
      scope s(parent);
      s.spawn(
          [](int fd, std::array<char, 4>& buf, std::stop_token own, result<int>& out, int& completions) -> task<void> {
            auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 1, ~0ULL); };
            out = co_await any_opcode(rd).with_stop(std::move(own));
            ++completions;
          }(fd, buf, std::move(own), out, completions));
      co_await s.join();
      co_return out;
    }(p.read_end, buf, own.get_token(), parent.get_token(), completions));
    a.join();
    b.join();
    EXPECT_EQ(completions, 1) << "round " << i;
    ASSERT_FALSE(got) << "round " << i << ": " << describe(got);
    EXPECT_EQ(got.error(), std::errc::operation_canceled) << "round " << i << ": " << got.error().message();
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
  write_text(p.write_end, "intact");
  EXPECT_EQ(drain(p.read_end), "intact");
}

// ---- chain ----

// A link the hatch refuses must not leave an earlier link's IOSQE_IO_LINK dangling: the
// request submitted next on the loop would otherwise be chained to (and cancelled with)
// a failed write.
TEST_P(AnyOpcodeAttack, ChainWithARefusedHatchLinkLeavesNoDanglingLink) {
  const std::string path = ::testing::TempDir() + "ringio-any-attack-" + std::to_string(::getpid());
  {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  auto f = file::open(path, O_RDONLY);  // a write to it fails: EBADF
  ASSERT_TRUE(f) << f.error().message();
  struct outcome {
    result<std::size_t> write = unexpected(std::errc::no_message);
    result<int> hatch = unexpected(std::errc::no_message);
    result<int> next = unexpected(std::errc::no_message);
    result<int> chained_nops = unexpected(std::errc::no_message);
  };
  auto r = run([](file& f) -> task<outcome> {
    outcome out;
    static const char data[4] = {'a', 'b', 'c', 'd'};
    auto refused = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->opcode = 250;
    };
    auto links = co_await chain(f.write_at(const_buffer(data, sizeof data), 0), any_opcode(refused));
    out.write = std::get<0>(links);
    out.hatch = std::get<1>(links);
    // The next request of the loop, alone.
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    out.next = co_await with_timeout(any_opcode(nop), 5s);
    auto user_data = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, 3);
    };
    auto three = co_await chain(any_opcode(nop), any_opcode(user_data), any_opcode(nop));
    if (!std::get<0>(three)) out.chained_nops = std::get<0>(three);
    else if (std::get<1>(three) || std::get<1>(three).error() != std::errc::invalid_argument)
      out.chained_nops = unexpected(std::errc::protocol_error);
    else if (std::get<2>(three) || std::get<2>(three).error() != std::errc::operation_canceled)
      out.chained_nops = unexpected(std::errc::state_not_recoverable);
    else out.chained_nops = 0;
    co_return out;
  }(*f));
  ::unlink(path.c_str());
  EXPECT_FALSE(r.write) << "a write to a read-only file succeeded";
  ASSERT_FALSE(r.hatch);
  if (on_uring()) {
    EXPECT_TRUE(r.hatch.error() == std::errc::function_not_supported ||
                r.hatch.error() == std::errc::operation_canceled)
        << r.hatch.error().message();
    EXPECT_TRUE(r.next) << "the request after the chain: " << describe(r.next);
    EXPECT_TRUE(r.chained_nops) << describe(r.chained_nops);
  }
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// A hatch link first, a file write after it: a refused hatch link (or one the kernel
// fails) cancels the write, which writes nothing; a hatch read that moves fewer bytes
// than it asked for is not an error to ringio (it does not know the buffer): the
// documented rule is that hatch links run one after the other, so the write runs.
TEST_P(AnyOpcodeAttack, ChainWithAHatchLinkFirst) {
  const std::string path = ::testing::TempDir() + "ringio-any-attack-first-" + std::to_string(::getpid());
  auto f = file::open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_TRUE(f) << f.error().message();
  pipe_fds p;
  write_text(p.write_end, "ab");
  struct outcome {
    std::vector<std::string> hatch;
    std::vector<std::string> write;
  };
  std::array<char, 16> buf{};
  auto r = run([](file& f, int fd, std::array<char, 16>& buf) -> task<outcome> {
    outcome out;
    static const char data[4] = {'w', 'x', 'y', 'z'};
    auto refused = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->opcode = 250;
    };
    auto kernel_fails = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->flags |= 0x80;
    };
    auto short_read = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
    auto size_text = [](const result<std::size_t>& w) { return w ? std::to_string(*w) : w.error().message(); };
    {
      auto links = co_await chain(any_opcode(refused), f.write_at(const_buffer(data, sizeof data), 0));
      out.hatch.push_back(describe(std::get<0>(links)));
      out.write.push_back(size_text(std::get<1>(links)));
    }
    {
      auto links = co_await chain(any_opcode(kernel_fails), f.write_at(const_buffer(data, sizeof data), 0));
      out.hatch.push_back(describe(std::get<0>(links)));
      out.write.push_back(size_text(std::get<1>(links)));
    }
    {
      auto links = co_await chain(any_opcode(short_read), f.write_at(const_buffer(data, sizeof data), 4));
      out.hatch.push_back(describe(std::get<0>(links)));
      out.write.push_back(size_text(std::get<1>(links)));
    }
    co_return out;
  }(*f, p.read_end, buf));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  ::unlink(path.c_str());
  ASSERT_EQ(r.hatch.size(), 3u);
  const std::string canceled = std::make_error_code(std::errc::operation_canceled).message();
  EXPECT_NE(r.hatch[0], "value 0");
  EXPECT_EQ(r.write[0], canceled) << "after a refused hatch link";
  EXPECT_NE(r.hatch[1], "value 0");
  EXPECT_EQ(r.write[1], canceled) << "after a hatch link the kernel failed";
  if (on_uring()) {
    EXPECT_EQ(r.hatch[2], "value 2");
    EXPECT_EQ(r.write[2], "4") << "after a hatch read of 2 bytes of 16";
    EXPECT_EQ(st.st_size, 8) << "the file holds what the writes wrote";
  } else {
    EXPECT_EQ(st.st_size, 0) << "a write after a refused hatch link wrote";
  }
}

// ---- the other backends touch nothing ----

TEST_P(AnyOpcodeAttack, OtherBackendsLeaveDescriptorsAlone) {
  if (on_uring()) GTEST_SKIP() << "the io_uring backend runs the requests";
  pipe_fds p;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  write_text(p.write_end, "pipe data");
  ASSERT_EQ(::send(sv[1], "sock data", 9, 0), 9);
  const int pipe_flags = ::fcntl(p.read_end, F_GETFL);
  const int sock_flags = ::fcntl(sv[0], F_GETFL);
  std::array<char, 64> buf{};
  const auto began = std::chrono::steady_clock::now();
  auto refused = run([](int pfd, int sfd, std::array<char, 64>& buf) -> task<int> {
    int n = 0;
    auto rd = [pfd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, pfd, buf.data(), buf.size(), ~0ULL); };
    auto rv = [sfd, &buf](io_uring_sqe* sqe) { io_uring_prep_recv(sqe, sfd, buf.data(), buf.size(), 0); };
    auto poll = [sfd](io_uring_sqe* sqe) { io_uring_prep_poll_add(sqe, sfd, POLLIN); };
    auto cl = [sfd](io_uring_sqe* sqe) { io_uring_prep_close(sqe, sfd); };
    auto sh = [sfd](io_uring_sqe* sqe) { io_uring_prep_shutdown(sqe, sfd, SHUT_RDWR); };
    for (int i = 0; i < 50; ++i) {
      auto a = co_await with_timeout(any_opcode(rd), 10s);
      auto b = co_await with_timeout(any_opcode(rv), 10s);
      auto c = co_await any_opcode(poll);
      auto d = co_await any_opcode(cl);
      auto e = co_await any_opcode(sh);
      for (const result<int>* x : {&a, &b, &c, &d, &e})
        if (!*x && x->error() == std::errc::operation_not_supported) ++n;
    }
    auto both = co_await when_all(any_opcode(rd), any_opcode(rv));
    if (!std::get<0>(both) && std::get<0>(both).error() == std::errc::operation_not_supported) ++n;
    if (!std::get<1>(both) && std::get<1>(both).error() == std::errc::operation_not_supported) ++n;
    co_return n;
  }(p.read_end, sv[0], buf));
  EXPECT_EQ(refused, 252);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 5s) << "a refused request waited for its deadline";
  try {
    auto rd = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, p.read_end, buf.data(), buf.size(), ~0ULL); };
    (void)ex::sync_wait(ctx(), ex::as_sender(with_timeout(any_opcode(rd), 10s)));
    ADD_FAILURE() << "the sender completed with a value";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::operation_not_supported) << e.code().message();
  }
  EXPECT_EQ(::fcntl(p.read_end, F_GETFL), pipe_flags) << "the pipe's file flags changed";
  EXPECT_EQ(::fcntl(sv[0], F_GETFL), sock_flags) << "the socket's file flags changed";
  EXPECT_EQ(drain(p.read_end), "pipe data");
  std::array<char, 16> got{};
  EXPECT_EQ(::recv(sv[0], got.data(), got.size(), MSG_DONTWAIT), 9) << "the socket lost its data or was closed";
  // The socket is still open and connected: the close and shutdown were not run.
  EXPECT_EQ(::send(sv[1], "more", 4, MSG_NOSIGNAL), 4);
  EXPECT_EQ(::recv(sv[0], got.data(), got.size(), MSG_DONTWAIT), 4);
  ::close(sv[0]);
  ::close(sv[1]);
  EXPECT_EQ(ctx().in_flight(), 0u);
}

// ---- the sender's lifecycle ----

template <class T>
struct probe_receiver {
  using receiver_concept = ex::receiver_t;
  std::optional<T>* value;
  std::optional<std::error_code>* error;
  bool* stopped;
  void set_value(T v) noexcept { *value = v; }
  void set_error(std::error_code ec) noexcept { *error = ec; }
  void set_stopped() noexcept { *stopped = true; }
};

// Connected and never started: nothing is sent. Connected from a const sender twice:
// two independent operations.
TEST_P(AnyOpcodeAttack, SenderConnectedNeverStartedSendsNothingAndCopiesAreIndependent) {
  pipe_fds p;
  write_text(p.write_end, "kept");
  std::array<char, 16> buf{};
  auto rd = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, p.read_end, buf.data(), buf.size(), ~0ULL); };
  std::optional<int> value;
  std::optional<std::error_code> error;
  bool stopped = false;
  {
    auto sender = ex::any_opcode(rd);
    auto state = std::move(sender).connect(probe_receiver<int>{&value, &error, &stopped});
    (void)state;
  }
  (void)run([]() -> task<result<void>> { co_return co_await sleep_for(1ms); }());
  EXPECT_FALSE(value.has_value());
  EXPECT_FALSE(error.has_value());
  EXPECT_FALSE(stopped);
  EXPECT_EQ(drain(p.read_end), "kept");
  if (!on_uring()) return;
  auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
  const auto sender = ex::any_opcode(nop);
  auto r = ex::sync_wait(ctx(), ex::when_all(sender, sender));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(std::get<0>(*r), 0);
  EXPECT_EQ(std::get<1>(*r), 0);
}

// start() off the loop's thread: set_error(operation_not_permitted), nothing sent.
TEST_P(AnyOpcodeAttack, SenderStartedOffTheLoopSendsNothing) {
  pipe_fds p;
  write_text(p.write_end, "kept");
  std::array<char, 16> buf{};
  auto rd = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, p.read_end, buf.data(), buf.size(), ~0ULL); };
  std::optional<int> value;
  std::optional<std::error_code> error;
  bool stopped = false;
  std::thread other([&] {
    auto state = ex::any_opcode(rd).connect(probe_receiver<int>{&value, &error, &stopped});
    state.start();
  });
  other.join();
  EXPECT_FALSE(value.has_value());
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, std::errc::operation_not_permitted) << error->message();
  EXPECT_EQ(drain(p.read_end), "kept");
}

// A hatch read moved to another loop's thread with spawn_on, its task bounded by
// with_timeout on the home loop: the stop crosses loops, the read is cancelled there
// (timed_out at home) and took nothing; on a readiness loop the read is refused.
TEST(AnyOpcodeAttackUring, StopCrossesLoopsToAHatchRead) {
  for (backend_kind other_kind : {backend_kind::uring, backend_kind::epoll}) {
    std::optional<io_context> home;
    std::optional<io_context> other;
    try {
      home.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true});
      other.emplace(io_context_options{.backend = other_kind, .quiet = true});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "a backend cannot start here: " << e.what();
    }
    std::thread runner([&other] { other->run(); });
    pipe_fds p;
    std::array<char, 8> buf{};
    auto r = sync_wait(*home, [](io_context& other, int fd, std::array<char, 8>& buf) -> task<result<int>> {
      auto remote = [](int fd, std::array<char, 8>& buf) -> task<result<int>> {
        auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
        co_return co_await any_opcode(rd);
      };
      auto moved = [](io_context& other, int fd, std::array<char, 8>& buf,
                      decltype(remote)& remote) -> task<result<int>> {
        co_return co_await spawn_on(other, remote(fd, buf));
      };
      co_return co_await with_timeout(moved(other, fd, buf, remote), 50ms);
    }(*other, p.read_end, buf));
    other->stop();
    runner.join();
    ASSERT_FALSE(r) << to_string(other_kind) << ": " << describe(r);
    if (other_kind == backend_kind::uring) {
      EXPECT_EQ(r.error(), std::errc::timed_out) << r.error().message();
    } else {
      EXPECT_EQ(r.error(), std::errc::operation_not_supported) << r.error().message();
    }
    write_text(p.write_end, "intact");
    EXPECT_EQ(drain(p.read_end), "intact");
  }
}

// ---- the in-flight cap ----

// Thousands of hatch requests, plain and with deadlines, on a ring of 8 SQEs capped at 8
// completions: every one completes with its own result.
TEST(AnyOpcodeAttackUring, ThousandsOverTheCapAllComplete) {
  auto ctx = capped_uring(8);
  if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
  constexpr int n = 3000;
  std::vector<result<int>> results(2 * n, unexpected(std::errc::no_message));
  std::size_t most_in_flight = 0;
  sync_wait(*ctx, [](std::vector<result<int>>& results, std::size_t& most, io_context& ctx) -> task<void> {
    scope s;
    for (int i = 0; i < n; ++i) {
      s.spawn([](result<int>& out) -> task<void> {
        auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
        out = co_await any_opcode(nop);
      }(results[i]));
      s.spawn([](result<int>& out) -> task<void> {
        auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
        out = co_await with_timeout(any_opcode(nop), 30s);
      }(results[n + i]));
      most = std::max(most, ctx.in_flight());
    }
    co_await s.join();
  }(results, most_in_flight, *ctx));
  int ok = 0;
  for (const auto& r : results)
    if (r && *r == 0) ++ok;
  EXPECT_EQ(ok, 2 * n);
  EXPECT_EQ(ctx->in_flight(), 0u);
  std::printf("most in flight seen: %zu\n", most_in_flight);
}

// Requests waiting for room under the cap, stopped: they send nothing (the pipe they
// would read keeps its bytes); one with a deadline fires while it waits.
TEST(AnyOpcodeAttackUring, BackloggedHatchRequestsStoppedSendNothingAndKeepDeadlines) {
  auto ctx = capped_uring(4);
  if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
  pipe_fds idle;  // never written: its reads hold the cap
  pipe_fds data;
  const std::string payload(100, 'd');
  write_text(data.write_end, payload);
  constexpr int blockers = 8;
  constexpr int waiting = 100;
  std::vector<std::array<char, 4>> bufs(blockers + waiting + 1);
  std::vector<result<int>> results(blockers + waiting, unexpected(std::errc::no_message));
  result<int> timed = unexpected(std::errc::no_message);
  watchdog wd(60s, [&idle] { (void)::write(idle.write_end, std::string(64, 'i').data(), 64); });
  sync_wait(*ctx,
            [](int idle_fd, int data_fd, std::vector<std::array<char, 4>>& bufs, std::vector<result<int>>& results,
               result<int>& timed) -> task<void> {
              scope s;
              for (int i = 0; i < blockers + waiting; ++i) {
                const int fd = i < blockers ? idle_fd : data_fd;
                s.spawn([](int fd, std::array<char, 4>& buf, result<int>& out) -> task<void> {
                  auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 1, ~0ULL); };
                  out = co_await any_opcode(rd);
                }(fd, bufs[i], results[i]));
              }
              // All started in one go: the first few took the cap (idle reads), the rest wait.
              auto rd = [data_fd, &bufs](io_uring_sqe* sqe) {
                io_uring_prep_read(sqe, data_fd, bufs.back().data(), 1, ~0ULL);
              };
              timed = co_await with_timeout(any_opcode(rd), 50ms);
              s.request_stop();
              co_await s.join();
            }(idle.read_end, data.read_end, bufs, results, timed));
  EXPECT_FALSE(wd.disarm()) << "the backlogged requests did not finish";
  ASSERT_FALSE(timed) << describe(timed);
  EXPECT_EQ(timed.error(), std::errc::timed_out) << timed.error().message();
  int canceled = 0;
  int read = 0;
  for (const auto& r : results) {
    if (r) read += *r;
    else if (r.error() == std::errc::operation_canceled) ++canceled;
    else ADD_FAILURE() << r.error().message();
  }
  const std::string left = drain(data.read_end);
  EXPECT_EQ(static_cast<int>(left.size()) + read, 100) << "bytes lost: read " << read << ", left " << left.size();
  EXPECT_EQ(read, 0) << "a request that waited under the cap ran after its stop";
  EXPECT_EQ(canceled, blockers + waiting);
  EXPECT_EQ(ctx->in_flight(), 0u);
}

// Requests waiting under the cap, stopped from another thread: cancelled without
// being sent (the pipe they would read keeps its bytes).
TEST(AnyOpcodeAttackUring, BackloggedHatchRequestsStoppedFromAnotherThread) {
  auto ctx = capped_uring(4);
  if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
  pipe_fds idle;
  pipe_fds data;
  const std::string payload(64, 'd');
  write_text(data.write_end, payload);
  constexpr int blockers = 6;
  constexpr int waiting = 64;
  std::vector<std::array<char, 4>> bufs(blockers + waiting);
  std::vector<result<int>> results(blockers + waiting, unexpected(std::errc::no_message));
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  watchdog wd(60s, [&idle] { (void)::write(idle.write_end, std::string(64, 'i').data(), 64); });
  sync_wait(*ctx,
            [](int idle_fd, int data_fd, std::vector<std::array<char, 4>>& bufs, std::vector<result<int>>& results,
               std::stop_token token) -> task<void> {
              scope s;
              for (int i = 0; i < blockers + waiting; ++i) {
                const int fd = i < blockers ? idle_fd : data_fd;
                s.spawn([](int fd, std::array<char, 4>& buf, result<int>& out, std::stop_token t) -> task<void> {
                  auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 1, ~0ULL); };
                  out = co_await any_opcode(rd).with_stop(std::move(t));
                }(fd, bufs[i], results[i], token));
              }
              co_await s.join();
            }(idle.read_end, data.read_end, bufs, results, stop.get_token()));
  stopper.join();
  EXPECT_FALSE(wd.disarm()) << "the stop from another thread did not end the requests";
  int canceled = 0;
  int read = 0;
  for (const auto& r : results) {
    if (r) read += *r;
    else if (r.error() == std::errc::operation_canceled) ++canceled;
    else ADD_FAILURE() << r.error().message();
  }
  EXPECT_EQ(read, 0) << "a request that waited under the cap ran after its stop";
  EXPECT_EQ(canceled, blockers + waiting);
  EXPECT_EQ(drain(data.read_end), payload);
  EXPECT_EQ(ctx->in_flight(), 0u);
}

// An automatic backend choice that fell back to epoll (io_uring_setup denied, as in a
// container): the hatch is refused with operation_not_supported, in both forms.
TEST(AnyOpcodeAttackFallback, UringThatFellBackToEpollRefuses) {
  int status_pipe[2];
  ASSERT_EQ(::pipe(status_pipe), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(status_pipe[0]);
    std::string report;
    syscall_filter deny({__NR_io_uring_setup}, EPERM);
    if (!deny.install()) {
      report = "seccomp unavailable";
    } else {
      try {
        io_context ctx(io_context_options{.quiet = true});
        if (ctx.backend() != backend_kind::epoll) report = "no fallback";
        auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
        auto r = sync_wait(ctx, [](decltype(nop)& nop) -> task<result<int>> {
          co_return co_await with_timeout(any_opcode(nop), 5s);
        }(nop));
        if (r || r.error() != std::errc::operation_not_supported) report += " task: " + describe(r);
        try {
          (void)ex::sync_wait(ctx, ex::any_opcode(nop));
          report += " sender: a value";
        } catch (const std::system_error& e) {
          if (e.code() != std::errc::operation_not_supported) report += " sender: " + e.code().message();
        }
      } catch (const std::exception& e) {
        report += std::string(" exception: ") + e.what();
      }
    }
    if (report.empty()) report = "ok";
    (void)::write(status_pipe[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(status_pipe[1]);
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = ::read(status_pipe[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  ::close(status_pipe[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << "the child died: signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  if (got == "seccomp unavailable") GTEST_SKIP() << got;
  EXPECT_EQ(got, "ok");
}

// The extreme deadlines: the largest one does not expire at once (saturated, not
// wrapped), one in the past expires at once; a FUTEX_WAIT that never wakes ends with its
// deadline.
TEST(AnyOpcodeAttackUring, ExtremeDeadlinesAndAFutexWait) {
  std::optional<io_context> ctx;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "io_uring cannot start here: " << e.what();
  }
  pipe_fds p;
  std::array<char, 8> buf{};
  alignas(4) static std::uint32_t word = 0;
  struct outcome {
    std::size_t longest_winner = 9;
    result<int> past = unexpected(std::errc::no_message);
    result<int> futex = unexpected(std::errc::no_message);
  };
  auto r = sync_wait(*ctx, [](int fd, std::array<char, 8>& buf) -> task<outcome> {
    outcome out;
    auto reader = [](int fd, std::array<char, 8>& buf, std::chrono::nanoseconds d) -> task<result<int>> {
      auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
      co_return co_await with_timeout(any_opcode(rd), d);
    };
    auto longest = co_await when_any(reader(fd, buf, std::chrono::nanoseconds::max()), sleep_for(50ms));
    out.longest_winner = longest.index();
    out.past = co_await reader(fd, buf, -1s);
    auto wait = [](io_uring_sqe* sqe) {
      io_uring_prep_rw(op_futex_wait, sqe, futex2_size_u32, &word, 0, 0);
      sqe->addr2 = 0;
      sqe->addr3 = FUTEX_BITSET_MATCH_ANY;
    };
    out.futex = co_await with_timeout(any_opcode(wait), 20ms);
    co_return out;
  }(p.read_end, buf));
  EXPECT_EQ(r.longest_winner, 1u) << "a read with the largest deadline ended before a 50 ms sleep";
  ASSERT_FALSE(r.past) << describe(r.past);
  EXPECT_EQ(r.past.error(), std::errc::timed_out) << r.past.error().message();
  ASSERT_FALSE(r.futex) << describe(r.futex);
  EXPECT_EQ(r.futex.error(), std::errc::timed_out) << r.futex.error().message();
  EXPECT_EQ(ctx->in_flight(), 0u);
  write_text(p.write_end, "intact");
  EXPECT_EQ(drain(p.read_end), "intact");
}

// An SQPOLL ring: requests run, refusals hold, a stop in flight cancels and waits.
TEST(AnyOpcodeAttackUring, SqpollRingRunsRefusesAndCancels) {
  std::optional<io_context> ctx;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .sqpoll = true, .quiet = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "io_uring with SQPOLL cannot start here: " << e.what();
  }
  pipe_fds p;
  std::array<char, 8> buf{};
  struct outcome {
    int nops = 0;
    result<int> refused = unexpected(std::errc::no_message);
    result<int> stopped = unexpected(std::errc::no_message);
    result<int> timed = unexpected(std::errc::no_message);
  };
  auto r = sync_wait(*ctx, [](int fd, std::array<char, 8>& buf) -> task<outcome> {
    outcome out;
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    for (int i = 0; i < 1000; ++i)
      if (auto n = co_await any_opcode(nop); n && *n == 0) ++out.nops;
    auto drained = [](io_uring_sqe* sqe) {
      io_uring_prep_nop(sqe);
      sqe->flags |= IOSQE_IO_DRAIN;
    };
    out.refused = co_await any_opcode(drained);
    auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
    auto read_task = [](decltype(rd)& rd) -> task<result<int>> { co_return co_await any_opcode(rd); };
    auto stopped = co_await with_timeout(read_task(rd), 20ms);
    out.stopped = stopped;
    out.timed = co_await with_timeout(any_opcode(rd), 20ms);
    co_return out;
  }(p.read_end, buf));
  EXPECT_EQ(r.nops, 1000);
  expect_invalid_argument("sqpoll", "IOSQE_IO_DRAIN", r.refused);
  ASSERT_FALSE(r.stopped) << describe(r.stopped);
  EXPECT_EQ(r.stopped.error(), std::errc::timed_out) << r.stopped.error().message();
  ASSERT_FALSE(r.timed) << describe(r.timed);
  EXPECT_EQ(r.timed.error(), std::errc::timed_out) << r.timed.error().message();
  EXPECT_EQ(ctx->in_flight(), 0u);
  write_text(p.write_end, "intact");
  EXPECT_EQ(drain(p.read_end), "intact");
}

// A cap of one completion (smaller than a request with a deadline and a cancel posts)
// and a cap far above the CQ (16 entries; the kernel keeps the overflow): thousands of
// hatch requests, plain, with deadlines that fire and with stops, all complete.
TEST(AnyOpcodeAttackUring, CapOfOneAndCapAboveTheCq) {
  for (unsigned cap : {1u, 100000u}) {
    auto ctx = capped_uring(cap);
    if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
    pipe_fds idle;
    constexpr int n = 2000;
    int ok = 0;
    int timed = 0;
    int stopped = 0;
    watchdog wd(120s, [&idle] { (void)::write(idle.write_end, std::string(4096, 'i').data(), 4096); });
    sync_wait(*ctx, [](int fd, int& ok, int& timed, int& stopped) -> task<void> {
      scope s;
      static std::array<char, 4> buf{};
      for (int i = 0; i < n; ++i) {
        s.spawn([](int& ok) -> task<void> {
          auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
          if (auto r = co_await with_timeout(any_opcode(nop), 60s); r && *r == 0) ++ok;
        }(ok));
        if (i % 100 == 0) {
          s.spawn([](int fd, int& timed) -> task<void> {
            auto rd = [fd](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 1, ~0ULL); };
            auto r = co_await with_timeout(any_opcode(rd), 10ms);
            if (!r && r.error() == std::errc::timed_out) ++timed;
          }(fd, timed));
          s.spawn([](int fd, int& stopped) -> task<void> {
            auto rd = [fd](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), 1, ~0ULL); };
            auto reader = [](decltype(rd)& rd) -> task<result<int>> { co_return co_await any_opcode(rd); };
            auto r = co_await with_timeout(reader(rd), 10ms);
            if (!r && r.error() == std::errc::timed_out) ++stopped;
          }(fd, stopped));
        }
      }
      co_await s.join();
    }(idle.read_end, ok, timed, stopped));
    EXPECT_FALSE(wd.disarm()) << "cap " << cap << ": the requests did not finish in time";
    EXPECT_EQ(ok, n) << "cap " << cap;
    EXPECT_EQ(timed, n / 100) << "cap " << cap;
    EXPECT_EQ(stopped, n / 100) << "cap " << cap;
    EXPECT_EQ(ctx->in_flight(), 0u);
  }
}

// ---- shutdown with hatch requests in flight ----

// ~io_context cancels everything, waits for every CQE and resumes the tasks with
// operation_canceled: a read that never completes, an hour-long TIMEOUT, a read blocked
// in an io-wq worker, a FUTEX_WAIT, and requests waiting under the cap. A task that
// starts another request during the shutdown gets it failed at once.
TEST(AnyOpcodeAttackUring, ShutdownWithHatchRequestsInFlight) {
  constexpr int kinds = 5;
  constexpr int extra = 6;  // over the cap of 4: some wait in the backlog
  std::vector<result<int>> results(kinds + extra, unexpected(std::errc::no_message));
  result<int> restarted = unexpected(std::errc::no_message);
  pipe_fds never;
  std::array<std::array<char, 8>, kinds + extra> bufs{};
  __kernel_timespec hour{3600, 0};
  alignas(4) static std::uint32_t futex_word = 0;
  bool destroyed_in_time = false;
  {
    auto ctx = capped_uring(4);
    if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
    auto reader = [](int fd, std::array<char, 8>& buf, bool async, result<int>& out) -> task<void> {
      auto rd = [fd, &buf, async](io_uring_sqe* sqe) {
        io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL);
        if (async) sqe->flags |= IOSQE_ASYNC;
      };
      out = co_await any_opcode(rd);
    };
    ctx->spawn(reader(never.read_end, bufs[0], false, results[0]));
    ctx->spawn([](__kernel_timespec& ts, result<int>& out) -> task<void> {
      auto t = [&ts](io_uring_sqe* sqe) { io_uring_prep_timeout(sqe, &ts, 0, 0); };
      out = co_await any_opcode(t);
    }(hour, results[1]));
    ctx->spawn(reader(never.read_end, bufs[2], true, results[2]));
    ctx->spawn([](result<int>& out) -> task<void> {
      auto wait = [](io_uring_sqe* sqe) {
        io_uring_prep_rw(op_futex_wait, sqe, futex2_size_u32, &futex_word, 0, 0);
        sqe->addr2 = 0;  // the value expected: the word stays 0
        sqe->addr3 = FUTEX_BITSET_MATCH_ANY;
      };
      out = co_await any_opcode(wait);
    }(results[3]));
    ctx->spawn([](int fd, std::array<char, 8>& buf, result<int>& out, result<int>& again) -> task<void> {
      auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
      out = co_await with_timeout(any_opcode(rd), 3600s);
      again = co_await any_opcode(rd);  // during the shutdown
    }(never.read_end, bufs[4], results[4], restarted));
    for (int i = 0; i < extra; ++i) ctx->spawn(reader(never.read_end, bufs[kinds + i], false, results[kinds + i]));
    ctx->spawn([](io_context& ctx) -> task<void> {
      (void)co_await sleep_for(50ms);
      ctx.stop();
    }(*ctx));
    ctx->run();
    std::atomic<bool> done{false};
    std::thread guard([&done] {
      for (int i = 0; i < 300 && !done.load(); ++i) std::this_thread::sleep_for(100ms);
      if (!done.load()) {
        std::fprintf(stderr, "~io_context did not return within 30 s\n");
        std::abort();
      }
    });
    ctx.reset();
    done = true;
    guard.join();
    destroyed_in_time = true;
  }
  EXPECT_TRUE(destroyed_in_time);
  const char* names[] = {"read", "TIMEOUT 1h", "IOSQE_ASYNC read", "FUTEX_WAIT", "read with deadline"};
  for (int i = 0; i < kinds + extra; ++i) {
    const char* name = i < kinds ? names[i] : "backlogged read";
    ASSERT_FALSE(results[i]) << name << ": " << describe(results[i]);
    EXPECT_EQ(results[i].error(), std::errc::operation_canceled) << name << ": " << results[i].error().message();
  }
  EXPECT_FALSE(restarted) << describe(restarted);
  write_text(never.write_end, "untouched");
  EXPECT_EQ(drain(never.read_end), "untouched");
}

// The context destroyed while another thread stops a request in flight: the shutdown
// and the stop race; the task is resumed once, with operation_canceled, and nothing is
// touched after (ASan and TSan watch). The seed is printed.
TEST(AnyOpcodeAttackUring, ShutdownRacingACrossThreadStop) {
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  pipe_fds never;
  const int rounds = under_sanitizer ? 60 : 200;
  for (int i = 0; i < rounds; ++i) {
    auto ctx = capped_uring(0);
    if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
    std::array<char, 8> buf{};
    result<int> out = unexpected(std::errc::no_message);
    int resumed = 0;
    std::stop_source stop;
    ctx->spawn([](int fd, std::array<char, 8>& buf, std::stop_token t, result<int>& out, int& resumed) -> task<void> {
      auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
      out = co_await any_opcode(rd).with_stop(std::move(t));
      ++resumed;
    }(never.read_end, buf, stop.get_token(), out, resumed));
    ctx->spawn([](io_context& ctx) -> task<void> {
      (void)co_await sleep_for(1ms);
      ctx.stop();
    }(*ctx));
    ctx->run();
    const int delay_us = static_cast<int>(rng() % 100);
    std::thread stopper([&stop, delay_us] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      stop.request_stop();
    });
    ctx.reset();
    stopper.join();
    EXPECT_EQ(resumed, 1) << "round " << i;
    ASSERT_FALSE(out) << "round " << i << ": " << describe(out);
    EXPECT_EQ(out.error(), std::errc::operation_canceled) << "round " << i << ": " << out.error().message();
  }
  write_text(never.write_end, "intact");
  EXPECT_EQ(drain(never.read_end), "intact");
}

// A hatch sender in flight when its context is destroyed: the receiver is completed
// (set_stopped) before the destructor returns, and the read took nothing.
TEST(AnyOpcodeAttackUring, SenderInFlightAtShutdownIsStopped) {
  auto ctx = capped_uring(0);
  if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
  pipe_fds never;
  std::array<char, 8> buf{};
  std::optional<int> value;
  std::optional<std::error_code> error;
  bool stopped = false;
  auto rd = [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, never.read_end, buf.data(), buf.size(), ~0ULL); };
  auto state = ex::any_opcode(rd).connect(probe_receiver<int>{&value, &error, &stopped});
  ctx->spawn([](decltype(state)& st, io_context& ctx) -> task<void> {
    st.start();
    (void)co_await sleep_for(10ms);
    ctx.stop();
  }(state, *ctx));
  ctx->run();
  EXPECT_FALSE(stopped || value || error) << "completed before the shutdown";
  ctx.reset();
  EXPECT_TRUE(stopped) << (value ? "set_value" : error ? "set_error " + error->message() : "not completed");
  write_text(never.write_end, "intact");
  EXPECT_EQ(drain(never.read_end), "intact");
}

// The context destroyed with a SPLICE from an empty pipe and an openat of a FIFO
// blocked in io-wq workers: the shutdown's cancel ends them (operation_canceled) without
// waiting for data. A rescuer unblocks them after 10 s should it not.
TEST(AnyOpcodeAttackUring, ShutdownEndsRequestsBlockedInAWorker) {
  auto ctx = capped_uring(0);
  if (!ctx) GTEST_SKIP() << "io_uring cannot start here";
  pipe_fds from;
  pipe_fds to;
  const std::string fifo = ::testing::TempDir() + "ringio-any-attack-fifo3-" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  result<int> spliced = unexpected(std::errc::no_message);
  result<int> opened = unexpected(std::errc::no_message);
  ctx->spawn([](int from, int to, result<int>& out) -> task<void> {
    auto splice = [from, to](io_uring_sqe* sqe) { io_uring_prep_splice(sqe, from, -1, to, -1, 64, 0); };
    out = co_await any_opcode(splice);
  }(from.read_end, to.write_end, spliced));
  ctx->spawn([](const std::string& fifo, result<int>& out) -> task<void> {
    auto open_fifo = [&fifo](io_uring_sqe* sqe) {
      io_uring_prep_openat(sqe, AT_FDCWD, fifo.c_str(), O_RDONLY | O_TRUNC | O_CLOEXEC, 0);
    };
    out = co_await any_opcode(open_fifo);
  }(fifo, opened));
  ctx->spawn([](io_context& ctx) -> task<void> {
    (void)co_await sleep_for(50ms);
    ctx.stop();
  }(*ctx));
  ctx->run();
  std::atomic<bool> finished{false};
  std::thread rescuer([&] {
    for (int i = 0; i < 100 && !finished; ++i) std::this_thread::sleep_for(100ms);
    while (!finished) {
      (void)::write(from.write_end, "r", 1);
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      std::this_thread::sleep_for(500ms);
      if (fd >= 0) ::close(fd);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  ctx.reset();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  finished = true;
  rescuer.join();
  ::unlink(fifo.c_str());
  if (opened) ::close(*opened);
  EXPECT_LT(ms, 5000) << "~io_context waited " << ms << " ms for requests blocked in workers";
  EXPECT_FALSE(spliced) << describe(spliced);
  if (!spliced) {
    EXPECT_EQ(spliced.error(), std::errc::operation_canceled) << spliced.error().message();
  }
  EXPECT_FALSE(opened) << describe(opened);
  if (!opened) {
    EXPECT_EQ(opened.error(), std::errc::operation_canceled) << opened.error().message();
  }
}

// ---- zero allocations ----
#ifndef ANY_ATTACK_TSAN

struct counting_scope {
  counting_scope() {
    allocations = 0;
    counting = true;
  }
  ~counting_scope() { counting = false; }
};

// "Nothing is allocated": awaited in a task (plain, with a deadline, with a transform,
// cancelled) and as a sender connected in the task's frame.
TEST(AnyOpcodeAttackUring, NoAllocationPerRequest) {
  std::optional<io_context> ctx;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "io_uring cannot start here: " << e.what();
  }
  pipe_fds p;
  std::array<char, 8> buf{};
  long counted = -1;
  int ok = 0;
  sync_wait(*ctx, [](int fd, std::array<char, 8>& buf, long& counted, int& ok) -> task<void> {
    auto nop = [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); };
    auto rd = [fd, &buf](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf.data(), buf.size(), ~0ULL); };
    auto size = [](int res, unsigned) noexcept { return static_cast<std::size_t>(res); };
    std::optional<std::size_t> value;
    std::optional<std::error_code> error;
    bool stopped = false;
    for (int round = 0; round < 2; ++round) {  // the first round warms up
      std::optional<counting_scope> counter;
      if (round == 1) counter.emplace();
      for (int i = 0; i < 200; ++i) {
        if (co_await any_opcode(nop)) ++ok;
        if (co_await with_timeout(any_opcode(nop), 10s)) ++ok;
        if (co_await any_opcode(nop, size)) ++ok;
        auto canceled = co_await with_timeout(any_opcode(rd), 1ms);
        if (!canceled && canceled.error() == std::errc::timed_out) ++ok;
        auto state = ex::any_opcode(nop, size).connect(probe_receiver<std::size_t>{&value, &error, &stopped});
        state.start();
        (void)co_await sleep_for(0ms);
        while (!value && !error && !stopped) (void)co_await sleep_for(1ms);
        if (value) ++ok;
        value.reset();
      }
      if (round == 1) counted = allocations.load();
    }
  }(p.read_end, buf, counted, ok));
  EXPECT_EQ(ok, 2 * 200 * 5);
  EXPECT_EQ(counted, 0) << "allocations during 200 rounds of hatch requests";
}

#endif  // ANY_ATTACK_TSAN

RINGIO_ALL_BACKENDS_AND_SIM(AnyOpcodeAttack);

}  // namespace
