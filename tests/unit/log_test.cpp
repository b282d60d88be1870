// SPDX-License-Identifier: Apache-2.0
// The logging hook: levels, the threshold, the replaceable handler, the default sink.
#include "ringio/log.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace ringio;

namespace {

// Captures every line; restores the default handler and threshold afterwards.
class Log : public ::testing::Test {
 protected:
  void SetUp() override {
    set_log_handler([this](log_level level, std::string_view text) {
      std::lock_guard lk(mu_);
      lines_.emplace_back(level, std::string(text));
    });
  }
  void TearDown() override {
    set_log_handler({});
    set_log_level(log_level::info);
  }
  std::vector<std::pair<log_level, std::string>> lines() {
    std::lock_guard lk(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<log_level, std::string>> lines_;
};

TEST_F(Log, FormatsAndPassesTheLevel) {
  log(log_level::warning, "accept: %s (%d)", "Too many open files", 24);
  log_line(log_level::error, "plain text");
  auto got = lines();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, log_level::warning);
  EXPECT_EQ(got[0].second, "accept: Too many open files (24)");
  EXPECT_EQ(got[1].first, log_level::error);
  EXPECT_EQ(got[1].second, "plain text");
}

TEST_F(Log, TheThresholdDropsLowerLevels) {
  EXPECT_EQ(get_log_level(), log_level::info);
  EXPECT_FALSE(log_enabled(log_level::debug));
  log(log_level::debug, "dropped %d", 1);
  log(log_level::info, "kept %d", 2);
  set_log_level(log_level::error);
  log(log_level::warning, "dropped %d", 3);
  log_line(log_level::info, "dropped");
  log(log_level::error, "kept %d", 4);
  set_log_level(log_level::debug);
  log(log_level::debug, "kept %d", 5);
  auto got = lines();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].second, "kept 2");
  EXPECT_EQ(got[1].second, "kept 4");
  EXPECT_EQ(got[2].second, "kept 5");
}

TEST_F(Log, LongLinesAreTruncatedNotOverrun) {
  std::string big(5000, 'x');
  log(log_level::error, "%s", big.c_str());
  auto got = lines();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].second.size(), 1023u);
  EXPECT_EQ(got[0].second, big.substr(0, 1023));
}

TEST_F(Log, AThrowingHandlerIsContained) {
  set_log_handler([](log_level, std::string_view) { throw std::runtime_error("sink broke"); });
  EXPECT_NO_THROW(log(log_level::error, "still fine"));
}

TEST_F(Log, ConcurrentLinesAllArriveWhileTheHandlerIsReplaced) {
  std::atomic<int> first{0}, second{0};
  set_log_handler([&first](log_level, std::string_view) { first.fetch_add(1); });
  constexpr int threads = 4, per_thread = 2000;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([] {
      for (int i = 0; i < per_thread; ++i) log(log_level::warning, "line %d", i);
    });
  set_log_handler([&second](log_level, std::string_view) { second.fetch_add(1); });
  for (auto& th : pool) th.join();
  EXPECT_EQ(first.load() + second.load(), threads * per_thread);
}

TEST_F(Log, TheDefaultSinkWritesOnePrefixedLineToStderr) {
  set_log_handler({});
  ::testing::internal::CaptureStderr();
  log(log_level::warning, "io_uring unavailable (%s); falling back to epoll", "EPERM");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "ringio: io_uring unavailable (EPERM); falling back to epoll\n");
}

TEST(LogLevel, Names) {
  EXPECT_EQ(to_string(log_level::debug), "debug");
  EXPECT_EQ(to_string(log_level::info), "info");
  EXPECT_EQ(to_string(log_level::warning), "warning");
  EXPECT_EQ(to_string(log_level::error), "error");
}

}  // namespace
