// SPDX-License-Identifier: Apache-2.0
// The load generators and pong, driven as programs: short real runs against real
// servers, their RESULT lines parsed, their CLI errors checked.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include "support/child_process.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// The port a server printed on its first line ("... 127.0.0.1:PORT, ...").
std::string port_of(child_process& p) {
  auto line = p.read_line(10s);
  if (!line) return "";
  auto pos = line->find("127.0.0.1:");
  if (pos == std::string::npos) return "";
  auto end = line->find_first_not_of("0123456789", pos + 10);
  return line->substr(pos + 10, end - pos - 10);
}

// Runs a client to completion; returns the numeric fields of its RESULT line.
std::map<std::string, double> run_client(std::vector<std::string> argv, int* status = nullptr) {
  child_process c(std::move(argv));
  std::map<std::string, double> fields;
  while (auto line = c.read_line(60s)) {
    if (line->rfind("RESULT ", 0) != 0) continue;
    // Flat JSON object: "key":number pairs are all we need.
    const std::string& s = *line;
    for (std::size_t i = s.find('"'); i != std::string::npos; i = s.find('"', i)) {
      auto close = s.find('"', i + 1);
      std::string key = s.substr(i + 1, close - i - 1);
      std::size_t v = close + 2;
      if (v < s.size() && (std::isdigit(static_cast<unsigned char>(s[v])) || s[v] == '-'))
        fields[key] = std::stod(s.substr(v));
      i = s.find_first_of(",}", close);
      if (i == std::string::npos) break;
      i = s.find('"', i);
    }
  }
  auto st = c.wait(60s);
  if (status) *status = st.value_or(-1);
  return fields;
}

class Loadgen : public ::testing::TestWithParam<const char*> {};

TEST_P(Loadgen, PingAgainstPongMeasuresThroughputWithoutErrors) {
  child_process pong({PONG_PATH, "0", "1", "16384", "10", "--backend", GetParam()});
  auto port = port_of(pong);
  ASSERT_FALSE(port.empty()) << pong.stderr_text();
  int st = -1;
  auto r = run_client({PING_PATH, port, "1", "16384", "10", "1", "--backend", GetParam(), "--verify"}, &st);
  EXPECT_EQ(st, 0);
  EXPECT_GT(r["gib_per_s"], 0.0);
  EXPECT_GT(r["round_trips"], 100.0);
  EXPECT_EQ(r["errors"], 0.0);
  EXPECT_EQ(r["bytes"], r["round_trips"] * 16384);
  // pong exits by itself once its 10 sessions have closed.
  EXPECT_EQ(pong.wait(10s), std::optional<int>(0)) << pong.stderr_text();
}

// The receive-buffer options of the multishot mode (bundles off, incremental buffers,
// both): blocks that fit a pool buffer, span several, or are tiny come back exactly.
TEST_P(Loadgen, PongEchoesBlocksExactlyWithEveryReceiveBufferOption) {
  for (auto [bundle, inc] : {std::pair{"off", "off"}, std::pair{"off", "on"}, std::pair{"on", "on"}}) {
    for (const char* block : {"16384", "100000", "7"}) {
      SCOPED_TRACE(std::string("bundle ") + bundle + " inc " + inc + " " + block);
      child_process pong(
          {PONG_PATH, "0", "2", block, "6", "--backend", GetParam(), "--recv-bundle", bundle, "--pbuf-inc", inc});
      auto port = port_of(pong);
      ASSERT_FALSE(port.empty()) << pong.stderr_text();
      int st = -1;
      auto r = run_client({PING_PATH, port, "2", block, "6", "0.25", "--backend", GetParam(), "--verify"}, &st);
      EXPECT_EQ(st, 0);
      EXPECT_GT(r["round_trips"], 10.0);
      EXPECT_EQ(r["errors"], 0.0);
      EXPECT_EQ(pong.wait(10s), std::optional<int>(0)) << pong.stderr_text();
    }
  }
}

// Both receive modes, with blocks that fit a pool buffer, span several, or are tiny:
// every echoed byte is checked (--verify).
TEST_P(Loadgen, PongEchoesBlocksExactlyInBothReceiveModes) {
  for (const char* mode : {"multishot", "single"}) {
    for (const char* block : {"16384", "100000", "7"}) {
      SCOPED_TRACE(std::string(mode) + " " + block);
      child_process pong({PONG_PATH, "0", "2", block, "6", "--backend", GetParam(), "--recv", mode});
      auto port = port_of(pong);
      ASSERT_FALSE(port.empty()) << pong.stderr_text();
      int st = -1;
      auto r = run_client({PING_PATH, port, "2", block, "6", "0.25", "--backend", GetParam(), "--verify"}, &st);
      EXPECT_EQ(st, 0);
      EXPECT_GT(r["round_trips"], 10.0);
      EXPECT_EQ(r["errors"], 0.0);
      EXPECT_EQ(pong.wait(10s), std::optional<int>(0)) << pong.stderr_text();
    }
  }
}

// The sender versions: pong --senders against ping --senders and ping --when-any,
// with blocks that fit in one receive or need several; every echoed byte is checked.
TEST_P(Loadgen, SenderPongAndPingEchoExactly) {
  for (const char* client : {"--senders", "--when-any"}) {
    for (const char* block : {"16384", "100000", "7"}) {
      SCOPED_TRACE(std::string(client) + " " + block);
      child_process pong({PONG_PATH, "0", "2", block, "4", "--backend", GetParam(), "--senders"});
      auto port = port_of(pong);
      ASSERT_FALSE(port.empty()) << pong.stderr_text();
      int st = -1;
      auto r = run_client({PING_PATH, port, "2", block, "4", "0.25", "--backend", GetParam(), "--verify", client}, &st);
      EXPECT_EQ(st, 0);
      EXPECT_GT(r["round_trips"], 10.0);
      EXPECT_EQ(r["errors"], 0.0);
      EXPECT_EQ(pong.wait(10s), std::optional<int>(0)) << pong.stderr_text();
    }
  }
}

TEST_P(Loadgen, EchoBenchReportsLatencyPercentiles) {
  child_process server({ECHO_SERVER_PATH, "--port", "0", "--backend", GetParam()});
  auto port = port_of(server);
  ASSERT_FALSE(port.empty());
  auto r = run_client({ECHO_BENCH_PATH, "--port", port, "--connections", "20", "--length", "512", "--duration", "1",
                       "--backend", GetParam(), "--verify"});
  EXPECT_GT(r["requests_per_s"], 0.0);
  EXPECT_EQ(r["errors"], 0.0);
  EXPECT_LE(r["p50_us"], r["p99_us"]);
  EXPECT_LE(r["p99_us"], r["max_us"]);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(10s), std::optional<int>(0));
}

TEST_P(Loadgen, ChurnBenchCompletesEverySession) {
  child_process server({ECHO_SERVER_PATH, "--port", "0", "--backend", GetParam()});
  auto port = port_of(server);
  ASSERT_FALSE(port.empty());
  auto r = run_client({CHURN_BENCH_PATH, "--port", port, "--concurrency", "50", "--sessions", "2000", "--messages", "3",
                       "--backend", GetParam(), "--verify"});
  EXPECT_EQ(r["sessions"], 2000.0);
  EXPECT_EQ(r["failed"], 0.0);
  EXPECT_GT(r["sessions_per_s"], 0.0);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(10s), std::optional<int>(0));
}

INSTANTIATE_TEST_SUITE_P(, Loadgen, ::testing::Values("uring", "epoll", "uring-poll"), [](const auto& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
});

TEST(LoadgenCli, BadArgumentsExitTwo) {
  for (auto argv : std::vector<std::vector<std::string>>{
           {PING_PATH},
           {PING_PATH, "1", "1", "16384", "10"},
           {PING_PATH, "1", "x", "16384", "10", "1"},
           {PING_PATH, "1", "1", "16384", "10", "0"},
           {PING_PATH, "1", "1", "16384", "10", "1s"},
           {PONG_PATH, "1", "1", "0", "1"},
           {PONG_PATH, "1", "1", "64", "1", "--senders", "--recv", "multishot"},
           {PONG_PATH, "1", "1", "64", "1", "--recv-bundle", "yes"},
           {PONG_PATH, "1", "1", "64", "1", "--pbuf-inc", "maybe"},
           {PING_PATH, "1", "1", "64", "1", "1", "--senders", "--when-any"},
           {PING_PATH, "1", "1", "64", "1", "1", "--op-timeout", "5"},
           {PING_PATH, "1", "1", "64", "1", "1", "--when-any", "--op-timeout", "0"},
           {ECHO_BENCH_PATH, "--port", "1"},
           {CHURN_BENCH_PATH, "--port", "1", "--concurrency", "-3"},
       }) {
    child_process c(argv);
    EXPECT_EQ(c.wait(10s), std::optional<int>(2)) << argv.size();
  }
}

TEST(LoadgenCli, UnreachableServerExitsOne) {
  child_process c({PING_PATH, "1", "1", "64", "1", "1"});  // nothing listens on port 1
  EXPECT_EQ(c.wait(20s), std::optional<int>(1));
}

}  // namespace
