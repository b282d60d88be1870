// SPDX-License-Identifier: Apache-2.0
// A C library that brings its own descriptor, driven from a loop: hiredis's
// asynchronous API through a small adapter built on wait_readable / wait_writable,
// against a real redis-server started on a free port with a temporary directory.
// 1,000 commands in flight from one loop, every answer checked.
#include <async.h>
#include <gtest/gtest.h>
#include <hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringio/net/wait_ready.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/child_process.hpp"
#include "support/redis_ready.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// The hooks hiredis calls to say which readiness it wants; two tasks wait for it.
struct redis_adapter {
  redisAsyncContext* ac = nullptr;
  int fd = -1;
  bool reading = false;
  bool writing = false;
  event read_wanted{event_mode::auto_reset};
  event write_wanted{event_mode::auto_reset};

  void attach(redisAsyncContext* c) {
    ac = c;
    fd = c->c.fd;
    c->ev.data = this;
    c->ev.addRead = [](void* p) {
      auto* a = static_cast<redis_adapter*>(p);
      if (!a->reading) a->read_wanted.set();
      a->reading = true;
    };
    c->ev.delRead = [](void* p) { static_cast<redis_adapter*>(p)->reading = false; };
    c->ev.addWrite = [](void* p) {
      auto* a = static_cast<redis_adapter*>(p);
      if (!a->writing) a->write_wanted.set();
      a->writing = true;
    };
    c->ev.delWrite = [](void* p) { static_cast<redis_adapter*>(p)->writing = false; };
    // hiredis closes the descriptor itself (redisAsyncFree): tell ringio.
    c->ev.cleanup = [](void* p) { forget_descriptor(static_cast<redis_adapter*>(p)->fd); };
  }
};

// Waits for readability while hiredis wants it, and lets hiredis read; until stopped.
task<void> pump_reads(redis_adapter& a) {
  for (;;) {
    if (!a.reading) {
      auto wanted = co_await a.read_wanted.wait();
      if (!wanted) co_return;
      continue;
    }
    auto ready = co_await wait_readable(a.fd);
    if (!ready) co_return;
    redisAsyncHandleRead(a.ac);
  }
}

task<void> pump_writes(redis_adapter& a) {
  for (;;) {
    if (!a.writing) {
      auto wanted = co_await a.write_wanted.wait();
      if (!wanted) co_return;
      continue;
    }
    auto ready = co_await wait_writable(a.fd);
    if (!ready) co_return;
    redisAsyncHandleWrite(a.ac);
  }
}

struct command_log {
  int expected = 0;
  int answered = 0;
  int correct = 0;
  event all_answered;
  std::vector<std::string> wrong;
};

struct pending_command {
  command_log* log;
  std::string want;  // the status or string the reply must carry
};

void on_reply(redisAsyncContext*, void* r, void* privdata) {
  std::unique_ptr<pending_command> cmd(static_cast<pending_command*>(privdata));
  auto* reply = static_cast<redisReply*>(r);
  command_log& log = *cmd->log;
  const bool ok = reply != nullptr && (reply->type == REDIS_REPLY_STATUS || reply->type == REDIS_REPLY_STRING) &&
                  std::string(reply->str, reply->len) == cmd->want;
  if (ok) ++log.correct;
  else if (log.wrong.size() < 5) log.wrong.push_back(cmd->want);
  if (++log.answered == log.expected) log.all_answered.set();
}

using ringio_test::accepts_connections;
using ringio_test::free_port;

class HiredisAsync : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    if (::access(server_path, X_OK) != 0) GTEST_SKIP() << server_path << " not installed (Debian redis-server)";
    char tmpl[] = "/tmp/ringio_redis_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    port_ = free_port();
    ASSERT_GT(port_, 0);
    server_ = std::make_unique<child_process>(
        std::vector<std::string>{server_path, "--port", std::to_string(port_), "--bind", "127.0.0.1", "--dir", dir_,
                                 "--save", "", "--appendonly", "no", "--loglevel", "warning", "--daemonize", "no"});
    ASSERT_TRUE(server_->started());
    ASSERT_TRUE(accepts_connections(port_)) << "redis-server did not come up on port " << port_;
  }
  void TearDown() override {
    server_.reset();  // SIGKILL and reap, by PID
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    backend_test::TearDown();
  }
  int port() const { return port_; }

 private:
  static constexpr const char* server_path = "/usr/bin/redis-server";
  std::string dir_;
  int port_ = -1;
  std::unique_ptr<child_process> server_;
};

TEST_P(HiredisAsync, AThousandCommandsInFlightFromOneLoopAllAnsweredCorrectly) {
  redisAsyncContext* ac = redisAsyncConnect("127.0.0.1", port());
  ASSERT_NE(ac, nullptr);
  ASSERT_EQ(ac->err, 0) << ac->errstr;
  redis_adapter adapter;
  adapter.attach(ac);
  command_log log;
  constexpr int pairs = 500;  // a SET then a GET of the same key: 1,000 commands
  log.expected = 2 * pairs;
  for (int i = 0; i < pairs; ++i) {
    const std::string key = "key:" + std::to_string(i);
    const std::string value = "value-" + std::to_string(i * 7919);
    ASSERT_EQ(redisAsyncCommand(ac, on_reply, new pending_command{&log, "OK"}, "SET %s %s", key.c_str(), value.c_str()),
              REDIS_OK);
    ASSERT_EQ(redisAsyncCommand(ac, on_reply, new pending_command{&log, value}, "GET %s", key.c_str()), REDIS_OK);
  }
  const bool answered = run([](redis_adapter& a, command_log& log) -> task<bool> {
    scope s;
    s.spawn(pump_reads(a));
    s.spawn(pump_writes(a));
    auto done = co_await with_timeout(log.all_answered.wait(), 60s);
    s.request_stop();
    co_await s.join();
    co_return done.has_value();
  }(adapter, log));
  EXPECT_TRUE(answered);
  EXPECT_EQ(log.answered, 2 * pairs);
  EXPECT_EQ(log.correct, 2 * pairs) << "first wrong answer expected: " << (log.wrong.empty() ? "" : log.wrong[0]);
  redisAsyncFree(ac);  // closes the descriptor (cleanup tells ringio)
}

RINGIO_ALL_BACKENDS_AND_SIM(HiredisAsync);

}  // namespace
