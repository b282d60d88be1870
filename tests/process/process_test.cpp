// SPDX-License-Identifier: Apache-2.0
// Child processes on every backend, with real programs (cat, sh, sleep, yes): pipes as
// streams, exit codes and signals, kill and the wait that kills, environment and working
// directory, and no zombie or descriptor left behind on any path (a stop, a kill, the
// child or the io_context destroyed first).
#include "ringio/process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/task.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/when_all.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace std::chrono_literals;
using ringio_test::backend_test;
using ringio_test::open_fd_count;

namespace {

// No child of this process is left unreaped (zombie or running).
bool no_child_left() {
  siginfo_t info{};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

// Whether `pid` is gone for good (reaped), not a zombie nor running.
bool reaped(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

// Whether `pid` no longer runs: gone, or a zombie its new parent has not reaped yet.
bool dead(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

std::vector<std::string> sh(std::string script) { return {"/bin/sh", "-c", std::move(script)}; }

class Process : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    fds_before_ = open_fd_count();
  }
  void TearDown() override {
    backend_test::TearDown();
    EXPECT_TRUE(no_child_left());
  }
  std::size_t fds_before_ = 0;
};

TEST_P(Process, CatEchoesAMebibyteThroughItsPipes) {
  std::string data(1 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : data) c = static_cast<char>(rng());
  auto back = run([](const std::string& data) -> task<std::string> {
    process::spawn_options o;
    o.in = o.out = process::stdio::pipe;
    std::vector<std::string> argv{"cat"};
    auto c = process::spawn(argv, o);
    EXPECT_TRUE(c) << c.error().message();
    if (!c) co_return "";
    // Write and read at once: cat's output pipe would fill while we still write.
    auto writer = [](process::child& c, const std::string& data) -> task<result<void>> {
      auto w = co_await c.in.write_all(const_buffer(data.data(), data.size()));
      (void)co_await c.in.close();
      co_return w;
    };
    task<result<void>> writing = writer(*c, data);
    task<result<std::string>> reading = c->out.read_to_end(2 << 20);
    auto [w, r] = co_await when_all(std::move(writing), std::move(reading));
    EXPECT_TRUE(w);
    EXPECT_TRUE(r);
    auto st = co_await c->wait();
    EXPECT_TRUE(st && st->success());
    co_return r ? *r : "";
  }(data));
  EXPECT_TRUE(back == data);
  EXPECT_EQ(open_fd_count(), fds_before_);
}

TEST_P(Process, ExitCodesAndSignalsComeBack) {
  run([]() -> task<void> {
    auto seven = process::spawn(sh("exit 7"));
    EXPECT_TRUE(seven);
    auto st = co_await seven->wait();
    EXPECT_TRUE(st);
    EXPECT_EQ(st->code, 7);
    EXPECT_TRUE(st->exited());
    EXPECT_FALSE(st->success());
    auto again = co_await seven->wait();  // reaped: the same status at once
    EXPECT_TRUE(again && *again == *st);
    EXPECT_FALSE(seven->running());
    EXPECT_EQ(seven->kill(SIGTERM).error(), std::errc::no_such_process);

    auto termed = process::spawn(sh("kill -TERM $$; sleep 5"));
    auto ts = co_await termed->wait();
    EXPECT_TRUE(ts);
    EXPECT_EQ(ts->signal, SIGTERM);
    EXPECT_EQ(ts->code, -1);
    EXPECT_FALSE(ts->exited());
  }());
}

TEST_P(Process, SpawnErrorsAreClear) {
  std::vector<std::string> missing{"/nonexistent/ringio-no-such-program"};
  auto a = process::spawn(missing);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error(), std::errc::no_such_file_or_directory);
  std::vector<std::string> not_in_path{"ringio-no-such-program-in-path"};
  auto b = process::spawn(not_in_path);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error(), std::errc::no_such_file_or_directory);
  auto c = process::spawn(std::vector<std::string>{});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error(), std::errc::invalid_argument);
  std::vector<std::string> dir{"/tmp"};
  auto d = process::spawn(dir);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error(), std::errc::permission_denied);
  process::spawn_options o;
  o.working_directory = "/nonexistent/ringio-dir";
  std::vector<std::string> t{"true"};
  auto e = process::spawn(t, o);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error(), std::errc::no_such_file_or_directory);
  EXPECT_EQ(open_fd_count(), fds_before_);
}

TEST_P(Process, EnvironmentAndWorkingDirectory) {
  ::setenv("RINGIO_PROCESS_TEST_PARENT", "from-parent", 1);
  auto got = run([]() -> task<std::string> {
    process::spawn_options o;
    o.out = process::stdio::pipe;
    o.env = {"RINGIO_PROCESS_TEST_CHILD=given", "RINGIO_PROCESS_TEST_PARENT=replaced"};
    o.working_directory = "/";
    auto c = process::spawn(sh("echo $RINGIO_PROCESS_TEST_CHILD $RINGIO_PROCESS_TEST_PARENT; pwd"), o);
    EXPECT_TRUE(c);
    auto out = co_await c->out.read_to_end(4096);
    (void)co_await c->wait();
    process::spawn_options cleared;
    cleared.out = process::stdio::pipe;
    cleared.clear_env = true;
    cleared.env = {"ONLY=this", "RINGIO_PROCESS_TEST_PARENT"};
    std::vector<std::string> env{"/usr/bin/env"};
    auto e = process::spawn(env, cleared);
    EXPECT_TRUE(e);
    auto env_out = co_await e->out.read_to_end(4096);
    (void)co_await e->wait();
    co_return out.value_or("?") + "|" + env_out.value_or("?");
  }());
  ::unsetenv("RINGIO_PROCESS_TEST_PARENT");
  EXPECT_EQ(got, "given replaced\n/\n|ONLY=this\n");
}

TEST_P(Process, OutputCollectsBothStreamsAndFeedsInput) {
  run([]() -> task<void> {
    auto r = co_await process::output(sh("echo out; echo err >&2; exit 3"));
    EXPECT_TRUE(r);
    EXPECT_EQ(r->out, "out\n");
    EXPECT_EQ(r->err, "err\n");
    EXPECT_EQ(r->status.code, 3);
    std::vector<std::string> cat{"cat"};
    std::string input = "hello through stdin";
    auto fed = co_await process::output(cat, input);
    EXPECT_TRUE(fed);
    EXPECT_EQ(fed->out, "hello through stdin");
    EXPECT_TRUE(fed->status.success());
    // A child that never reads its input and exits: the input's broken pipe is not an error.
    std::string lots(1 << 20, 'x');
    auto deaf = co_await process::output(sh("exit 0"), lots);
    EXPECT_TRUE(deaf) << deaf.error().message();
  }());
  EXPECT_EQ(open_fd_count(), fds_before_);
}

TEST_P(Process, OutputPastItsBoundIsAnErrorAndTheChildIsKilled) {
  run([]() -> task<void> {
    std::vector<std::string> yes{"yes"};
    auto r = co_await process::output(yes, std::string(), 10000);
    EXPECT_FALSE(r);
    if (!r) {
      EXPECT_EQ(r.error(), errc::message_too_long);
    }
  }());
  EXPECT_EQ(open_fd_count(), fds_before_);
}

TEST_P(Process, WritingToAChildThatExitedIsBrokenPipeNotADeadProcess) {
  run([]() -> task<void> {
    process::spawn_options o;
    o.in = process::stdio::pipe;
    auto c = process::spawn(sh("exit 0"), o);
    EXPECT_TRUE(c);
    (void)co_await c->wait();
    std::string big(1 << 20, 'x');
    auto w = co_await c->in.write_all(const_buffer(big.data(), big.size()));
    EXPECT_FALSE(w);
    if (!w) {
      EXPECT_EQ(w.error(), std::errc::broken_pipe);
    }
  }());
}

TEST_P(Process, KillAndTheWaitThatKills) {
  run([]() -> task<void> {
    std::vector<std::string> sleeper{"sleep", "100"};
    auto a = process::spawn(sleeper);
    EXPECT_TRUE(a->kill(SIGTERM));
    auto sa = co_await a->wait();
    EXPECT_TRUE(sa && sa->signal == SIGTERM);

    // Obeys SIGTERM within the grace period.
    auto b = process::spawn(sleeper);
    auto sb = co_await b->wait_or_kill(50ms, 5000ms);
    EXPECT_TRUE(sb && sb->signal == SIGTERM);

    // Ignores SIGTERM: SIGKILL after the grace period.
    auto c = process::spawn(sh("trap '' TERM; exec sleep 100"));
    auto sc = co_await c->wait_or_kill(50ms, 100ms);
    EXPECT_TRUE(sc && sc->signal == SIGKILL);

    // Ends in time: its own status.
    auto d = process::spawn(sh("exit 4"));
    auto sd = co_await d->wait_or_kill(10000ms);
    EXPECT_TRUE(sd && sd->code == 4);
  }());
}

TEST_P(Process, AStoppedWaitLeavesTheChildWaitable) {
  run([]() -> task<void> {
    std::vector<std::string> sleeper{"sleep", "100"};
    auto c = process::spawn(sleeper);
    auto timed = co_await with_timeout(c->wait(), 20ms);
    EXPECT_FALSE(timed);
    if (!timed) {
      EXPECT_EQ(timed.error(), std::errc::timed_out);
    }
    EXPECT_TRUE(c->running());
    EXPECT_TRUE(reaped(c->id()) == false);
    EXPECT_TRUE(c->kill());
    auto st = co_await c->wait();
    EXPECT_TRUE(st && st->signal == SIGKILL);
  }());
}

TEST_P(Process, ADestroyedChildIsKilledAndReaped) {
  pid_t pid = -1;
  run([](pid_t& pid) -> task<void> {
    process::spawn_options o;
    o.in = o.out = o.err = process::stdio::pipe;
    std::vector<std::string> sleeper{"sleep", "100"};
    auto c = process::spawn(sleeper, o);
    EXPECT_TRUE(c);
    pid = c->id();
    co_return;  // destroyed unwaited
  }(pid));
  EXPECT_TRUE(reaped(pid));
  EXPECT_EQ(open_fd_count(), fds_before_);
}

TEST_P(Process, ContextDestroyedWhileWaitingLeavesNothing) {
  pid_t pid = -1;
  std::error_code wait_error;
  {
    io_context other(io_context_options{.backend = GetParam(), .quiet = true});
    other.spawn([](pid_t& pid, std::error_code& wait_error) -> task<void> {
      process::spawn_options o;
      o.out = process::stdio::pipe;
      std::vector<std::string> sleeper{"sleep", "100"};
      auto c = process::spawn(sleeper, o);
      pid = c->id();
      auto st = co_await c->wait();
      wait_error = st ? std::error_code{} : st.error();
    }(pid, wait_error));
    // Let it block in the wait, then destroy the context under it.
    sync_wait(other, []() -> task<void> { (void)co_await sleep_for(20ms); }());
  }
  EXPECT_GT(pid, 0);
  EXPECT_EQ(wait_error, std::errc::operation_canceled);
  EXPECT_TRUE(reaped(pid));
  EXPECT_EQ(open_fd_count(), fds_before_);
}

TEST_P(Process, ProcessGroupsAreKilledWhole) {
  run([]() -> task<void> {
    process::spawn_options o;
    o.new_process_group = true;
    o.out = process::stdio::pipe;
    auto c = process::spawn(sh("sleep 100 & echo $!; wait"), o);
    EXPECT_TRUE(c);
    char buf[32] = {};
    auto n = co_await c->out.read_some(mutable_buffer(buf, sizeof buf - 1));
    EXPECT_TRUE(n && *n > 0);
    const pid_t grandchild = static_cast<pid_t>(std::atoi(buf));
    EXPECT_GT(grandchild, 0);
    EXPECT_TRUE(c->kill_group(SIGKILL));
    auto st = co_await c->wait();
    EXPECT_TRUE(st && st->signal == SIGKILL);
    // The grandchild (reparented to init) got the signal too.
    // Real time, not the loop's (a simulated world's time runs ahead).
    for (int i = 0; i < 500 && !dead(grandchild); ++i) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(dead(grandchild));

    std::vector<std::string> t{"true"};
    auto plain = process::spawn(t);
    EXPECT_EQ(plain->kill_group(SIGKILL).error(), std::errc::invalid_argument);
    (void)co_await plain->wait();
  }());
}

TEST_P(Process, ManyChildrenAtOnce) {
  run([]() -> task<void> {
    std::vector<task<result<process::output_result>>> all;
    for (int i = 0; i < 40; ++i) all.push_back(process::output(sh("echo child " + std::to_string(i))));
    auto results = co_await when_all(std::move(all));
    for (std::size_t i = 0; i < results.size(); ++i) {
      EXPECT_TRUE(results[i]);
      if (results[i]) {
        EXPECT_EQ(results[i]->out, "child " + std::to_string(i) + "\n");
      }
    }
  }());
  EXPECT_EQ(open_fd_count(), fds_before_);
}

// Seeded: children that exit, crash, sleep or echo, each awaited plainly, with a
// deadline, stopped, killed or abandoned; at the end no child and no descriptor is left.
TEST_P(Process, RandomStopsKillsAndAbandonsLeaveNothing) {
  const auto seed = ringio_test::test_seed();
  SCOPED_TRACE("RINGIO_TEST_SEED=" + std::to_string(seed));
  run([](std::uint64_t seed) -> task<void> {
    std::mt19937_64 rng(seed);
    scope s;
    for (int i = 0; i < 30; ++i) {
      s.spawn([](std::uint64_t seed) -> task<void> {
        std::mt19937_64 rng(seed);
        process::spawn_options o;
        o.in = o.out = process::stdio::pipe;
        const int kind = static_cast<int>(rng() % 4);
        std::vector<std::string> argv = kind == 0   ? sh("exit " + std::to_string(rng() % 5))
                                        : kind == 1 ? sh("kill -KILL $$")
                                        : kind == 2 ? std::vector<std::string>{"sleep", "100"}
                                                    : std::vector<std::string>{"cat"};
        auto c = process::spawn(argv, o);
        EXPECT_TRUE(c);
        if (!c) co_return;
        const int how = static_cast<int>(rng() % 5);
        if (how == 0) co_return;  // abandoned: killed and reaped by the destructor
        if (how == 1) {
          (void)c->kill(SIGKILL);
          auto st = co_await c->wait();
          EXPECT_TRUE(st);
          co_return;
        }
        if (how == 2) {
          auto st = co_await with_timeout(c->wait(), std::chrono::milliseconds(rng() % 20));
          if (!st) {
            EXPECT_EQ(st.error(), std::errc::timed_out);
          }
          co_return;
        }
        if (how == 3) {
          std::string line = "line\n";
          (void)co_await c->in.write_all(const_buffer(line.data(), line.size()));
          (void)co_await c->in.close();
          auto st = co_await c->wait_or_kill(std::chrono::milliseconds(rng() % 30), 20ms);
          EXPECT_TRUE(st);
          co_return;
        }
        auto st = co_await c->wait_or_kill(std::chrono::milliseconds(rng() % 30));
        EXPECT_TRUE(st);
      }(rng()));
    }
    co_await s.join();
  }(seed));
  EXPECT_EQ(open_fd_count(), fds_before_);
}

}  // namespace

RINGIO_ALL_BACKENDS_AND_SIM(Process);
