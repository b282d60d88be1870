// SPDX-License-Identifier: Apache-2.0
// hiredis's blocking API (redisConnect, redisCommand), unmodified, on fibers made
// cooperative by the system-call hooks, against a real redis-server started on a free
// port with a temporary directory: up to 1,000 fibers on one loop, each running SET and
// GET in a loop, every answer checked, and a task on the same loop measuring the
// longest stall. The same client code on plain threads gives the same answers.
#include <gtest/gtest.h>
#include <hiredis.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringio/fiber.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/child_process.hpp"
#include "support/loop_stall_meter.hpp"
#include "support/redis_ready.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

#ifdef RINGIO_SANITIZED
constexpr std::size_t client_stack = 1024 * 1024;  // hiredis reads into 16 KiB on the stack
#else
constexpr std::size_t client_stack = 256 * 1024;
#endif
constexpr int rounds = 10;  // SET then GET, per client

using ringio_test::accepts_connections;
using ringio_test::free_port;

// Raises the soft descriptor limit to the hard one; returns the soft limit now.
rlim_t raise_nofile() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
    ::getrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur;
}

// One client as any blocking C program writes it: connect, then SET and GET of keys of
// its own, each answer checked. Returns the number of correct answers (2 per round),
// or -1 when the connection failed.
int run_client(int port, int id, std::string* first_error) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err != 0) {
    if (first_error != nullptr && first_error->empty()) *first_error = c != nullptr ? c->errstr : "no context";
    if (c != nullptr) redisFree(c);
    return -1;
  }
  int correct = 0;
  for (int i = 0; i < rounds; ++i) {
    const std::string key = "k:" + std::to_string(id) + ":" + std::to_string(i);
    const std::string value = "v-" + std::to_string(id * 7919 + i);
    auto* set = static_cast<redisReply*>(redisCommand(c, "SET %s %s", key.c_str(), value.c_str()));
    if (set != nullptr && set->type == REDIS_REPLY_STATUS && std::string(set->str, set->len) == "OK") ++correct;
    else if (first_error != nullptr && first_error->empty())
      *first_error = set == nullptr ? c->errstr : "bad SET reply";
    if (set != nullptr) freeReplyObject(set);
    auto* get = static_cast<redisReply*>(redisCommand(c, "GET %s", key.c_str()));
    if (get != nullptr && get->type == REDIS_REPLY_STRING && std::string(get->str, get->len) == value) ++correct;
    else if (first_error != nullptr && first_error->empty())
      *first_error = get == nullptr ? c->errstr : "bad GET reply";
    if (get != nullptr) freeReplyObject(get);
  }
  redisFree(c);
  return correct;
}

class FiberHooksHiredis : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    if (GetParam() == backend_kind::sim)
      GTEST_SKIP() << "the hooks wait on real descriptors; sim is not a loop for them";
    if (::access(server_path, X_OK) != 0) GTEST_SKIP() << server_path << " not installed (Debian redis-server)";
    nofile_ = raise_nofile();
    char tmpl[] = "/tmp/ringio_redis_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    port_ = free_port();
    ASSERT_GT(port_, 0);
    server_ = std::make_unique<child_process>(std::vector<std::string>{
        server_path, "--port", std::to_string(port_), "--bind", "127.0.0.1", "--dir", dir_, "--save", "",
        "--appendonly", "no", "--loglevel", "warning", "--daemonize", "no", "--maxclients", "4000"});
    ASSERT_TRUE(server_->started());
    ASSERT_TRUE(accepts_connections(port_)) << "redis-server did not come up on port " << port_;
  }
  void TearDown() override {
    server_.reset();  // SIGKILL and reap, by PID
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    backend_test::TearDown();
  }
  int port() const { return port_; }
  // 1,000 clients, or fewer when the descriptor limit is lower (ours and the server's).
  int clients() const { return static_cast<int>(std::min<rlim_t>(1000, nofile_ > 200 ? nofile_ - 200 : 1)); }

 private:
  static constexpr const char* server_path = "/usr/bin/redis-server";
  std::string dir_;
  int port_ = -1;
  rlim_t nofile_ = 0;
  std::unique_ptr<child_process> server_;
};

TEST_P(FiberHooksHiredis, AThousandBlockingClientsOnOneLoopAllAnswered) {
  const int n = clients();
  std::vector<int> correct(static_cast<std::size_t>(n), -2);
  std::string first_error;
  stall_record stalls;
  const auto t0 = std::chrono::steady_clock::now();
  run([](int port, std::vector<int>& correct, std::string& err, stall_record& stalls) -> task<void> {
    std::atomic<bool> running{true};
    std::atomic<bool> started{false};
    scope meter;
    meter.spawn(stall_meter(running, started, stalls));
    scope clients;
    for (std::size_t i = 0; i < correct.size(); ++i)
      spawn_fiber(
          clients, [port, i, &correct, &err] { correct[i] = run_client(port, static_cast<int>(i), &err); },
          fiber_options{.stack_size = client_stack});
    started = true;
    co_await clients.join();
    running = false;
    co_await meter.join();
  }(port(), correct, first_error, stalls));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long answered = std::count(correct.begin(), correct.end(), 2 * rounds);
  const double ms_all = std::chrono::duration<double, std::milli>(stalls.longest).count();
  const double ms_after = std::chrono::duration<double, std::milli>(stalls.longest_after_start).count();
  std::printf(
      "hooked hiredis: %d clients x %d commands on one loop (%s): %.3f s; longest loop stall %.3f ms (%.3f ms once "
      "every client was spawned), %ld ticks of 1 ms\n",
      n, 2 * rounds, to_string(GetParam()).data(), seconds, ms_all, ms_after, stalls.ticks);
  RecordProperty("longest_stall_us", static_cast<int>(stalls.longest.count() / 1000));
  RecordProperty("longest_stall_after_start_us", static_cast<int>(stalls.longest_after_start.count() / 1000));
  EXPECT_EQ(answered, n) << "first error: " << first_error;
  EXPECT_GT(stalls.ticks, 0) << "the loop never ran while the clients worked";
}

TEST_P(FiberHooksHiredis, TheSameClientsOnPlainThreadsGiveTheSameAnswers) {
  // Outside fibers the hooks are libc's calls: blocking clients on threads of their own.
  constexpr int threads = 8;
  std::vector<int> correct(threads, -2);
  std::vector<std::thread> pool;
  std::string first_error;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { correct[static_cast<std::size_t>(t)] = run_client(port(), 100000 + t, nullptr); });
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(correct[static_cast<std::size_t>(t)], 2 * rounds) << "thread " << t;
  // And on the loop's own thread, outside any fiber, a client blocks as it would anywhere.
  EXPECT_EQ(run_client(port(), 200000, &first_error), 2 * rounds) << first_error;
}

RINGIO_ALL_BACKENDS(FiberHooksHiredis);

}  // namespace
