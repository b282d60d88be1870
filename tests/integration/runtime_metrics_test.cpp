// SPDX-License-Identifier: Apache-2.0
// runtime metrics read from other threads and other loops while the loops end: never
// a read of a loop that is gone, never a counter that goes down (run under TSan too).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/http/metrics_handler.hpp"
#include "ringio/http/request.hpp"
#include "ringio/http/response.hpp"
#include "ringio/io_context.hpp"
#include "ringio/post.hpp"
#include "ringio/runtime.hpp"
#include "ringio/task.hpp"
#include "ringio/time/sleep.hpp"
#include "support/seed.hpp"

using namespace std::chrono_literals;

namespace {

constexpr std::size_t timer = 1;  // (loop_metrics::kind_names)

// Each loop's iterations on a page: the lines `ringio_loop_iterations_total{loop="i"} N`.
std::map<std::string, double> iterations_on(const std::string& page) {
  std::map<std::string, double> each;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("ringio_loop_iterations_total{", 0) == 0)
      each[line.substr(0, line.find('}'))] = std::stod(line.substr(line.rfind(' ') + 1));
  return each;
}

// runtime::metrics() and metrics_of() from another thread while stop() tears the loops
// down: no use after free (ASan), no race (TSan), no read below an earlier one, and
// afterwards the figures the loops ended with.
TEST(RuntimeMetricsCrossThread, ReadsWhileTheRuntimeStops) {
  for (int round = 0; round < 20; ++round) {
    ringio::runtime rt({.threads = 3, .context = {.quiet = true}});
    std::atomic<bool> go{false}, done{false};
    std::uint64_t last_sum = 0, last_one = 0;
    bool went_down = false;
    std::thread reader([&] {
      go = true;
      while (!done.load()) {
        const std::uint64_t sum = rt.metrics().iterations, one = rt.metrics_of(2).iterations;
        went_down |= sum < last_sum || one < last_one;
        last_sum = sum;
        last_one = one;
      }
    });
    while (!go.load()) std::this_thread::yield();
    // Every other round stops the loops only once each has gone round (a loop whose
    // thread has not yet run when stop() comes may end without an iteration).
    const bool all_ran = round % 2 == 0;
    for (int k = 0; all_ran && k < 10'000; ++k) {
      bool each = true;
      for (unsigned i = 0; i < rt.size(); ++i) each = each && rt.metrics_of(i).iterations > 0;
      if (each) break;
      std::this_thread::sleep_for(1ms);
    }
    rt.stop();
    done = true;
    reader.join();
    EXPECT_FALSE(went_down);
    const ringio::loop_metrics m = rt.metrics();
    EXPECT_GE(m.iterations, last_sum);
    EXPECT_EQ(rt.metrics().iterations, m.iterations);
    std::uint64_t sum = 0;
    for (unsigned i = 0; i < rt.size(); ++i) {
      sum += rt.metrics_of(i).iterations;
      if (all_ran) {
        EXPECT_GT(rt.metrics_of(i).iterations, 0u) << i;
      }
    }
    EXPECT_EQ(sum, m.iterations);
  }
}

// The metrics handler of a runtime answering on one loop (a scrape during a server's
// drain) while the others end at the runtime's stop(); before it, in a seeded random
// order, some have their run() returned by io_context::stop() (from the scraping loop
// or from another thread; the runtime runs them again). The scraping loop does not
// return to its loop meanwhile, so the others end under its reads; every page lists
// every loop, no count goes down, and a loop that ended keeps its last figures.
TEST(RuntimeMetricsCrossThread, MetricsHandlerWhileTheOtherLoopsEnd) {
  const std::uint64_t seed = ringio_test::test_seed();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 6; ++round) {
    const unsigned loops = 2 + static_cast<unsigned>(rng() % 3);
    const unsigned scraper = static_cast<unsigned>(rng() % loops);
    const auto scrape_for = std::chrono::milliseconds(50 + rng() % 150);
    std::vector<unsigned> ends_early;  // io_context::stop() one by one while the scrapes go on
    for (unsigned i = 0; i < loops; ++i)
      if (i != scraper && rng() % 2 == 0) ends_early.push_back(i);
    const bool stop_from_the_scraper = rng() % 2 == 0;
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " round " << round << ": " << loops << " loops, scraper "
                                      << scraper << ", " << ends_early.size() << " end early"
                                      << (stop_from_the_scraper ? " (stopped by the scraper)" : ""));

    ringio::runtime rt({.threads = loops, .context = {.quiet = true}});
    rt.run_on_each([](ringio::io_context&, unsigned) -> ringio::task<void> { (void)co_await ringio::sleep_for(1ms); });
    std::vector<ringio::io_context*> early;
    for (unsigned i : ends_early) early.push_back(&rt.context(i));
    ringio::http::handler page = ringio::http::metrics_handler(rt);
    // `scraping`: set once the early stops the scraper makes are made (the contexts are
    // valid until the runtime's stop).
    std::atomic<bool> scraping{false};
    std::vector<std::string> pages;
    auto body = [](ringio::http::handler& h, std::atomic<bool>& flag, std::vector<std::string>& out,
                   std::chrono::milliseconds length, std::vector<ringio::io_context*> to_stop) -> ringio::task<void> {
      ringio::http::request req;
      const auto start = std::chrono::steady_clock::now();
      for (int k = 0; std::chrono::steady_clock::now() - start < length; ++k) {
        ringio::http::response r = co_await h(req);
        if (k % 100 == 0) out.emplace_back(r.body());
        // Spread the early stops over the first half of the scrapes.
        if (!to_stop.empty() && std::chrono::steady_clock::now() - start > length / 2 / (to_stop.size() + 1)) {
          to_stop.back()->stop();
          to_stop.pop_back();
        }
        if (to_stop.empty()) flag = true;
      }
      ringio::http::response last = co_await h(req);
      out.emplace_back(last.body());
    };
    ringio::post(rt.context(scraper), [&] {
      rt.context(scraper).spawn(
          body(page, scraping, pages, scrape_for, stop_from_the_scraper ? early : std::vector<ringio::io_context*>{}));
    });
    while (!scraping.load()) std::this_thread::yield();
    if (!stop_from_the_scraper)
      for (ringio::io_context* c : early) c->stop();
    rt.stop();

    ASSERT_GE(pages.size(), 2u);
    std::map<std::string, double> before = iterations_on(pages.front());
    EXPECT_EQ(before.size(), loops) << pages.front();
    for (const std::string& text : pages) {
      std::map<std::string, double> now = iterations_on(text);
      ASSERT_EQ(now.size(), before.size()) << text;
      for (auto& [loop, n] : now) EXPECT_GE(n, before[loop]) << loop << ": the iterations went down";
      before = std::move(now);
    }
    for (auto& [loop, n] : before) EXPECT_GT(n, 0.0) << loop;
    for (unsigned i = 0; i < loops; ++i) EXPECT_GT(rt.metrics_of(i).iterations, 0u) << i;
  }
}

// What a loop has in flight when the runtime stops is cancelled, and counted, before the
// loop's last figures are kept: started equals completed, the cancellation is there,
// and no task is left alive. (Found by an outside review: the figures were taken
// before the cancellations.)
TEST(RuntimeMetricsCrossThread, CancellationsAtTheEndAreCounted) {
  for (bool run_returned_first : {false, true}) {
    SCOPED_TRACE(run_returned_first ? "io_context::stop() first" : "runtime::stop() only");
    ringio::runtime rt({.threads = 2, .context = {.quiet = true}});
    std::atomic<int> sleeper_saw{-1};
    rt.run_on_each([&sleeper_saw](ringio::io_context& ctx, unsigned i) -> ringio::task<void> {
      if (i == 1)
        ctx.spawn([](std::atomic<int>& saw) -> ringio::task<void> {
          auto slept = co_await ringio::sleep_for(10s);
          saw = slept ? 0 : slept.error().value();
        }(sleeper_saw));
      co_return;
    });
    ringio::loop_metrics running = rt.metrics_of(1);
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         running.ops_started[timer] == running.ops_completed[timer] && std::chrono::steady_clock::now() < deadline;
         running = rt.metrics_of(1))
      std::this_thread::sleep_for(1ms);  // (the spawned task starts after run_on_each returned)
    EXPECT_EQ(running.tasks_alive, 1u);
    EXPECT_EQ(running.ops_started[timer] - running.ops_completed[timer], 1u);
    if (run_returned_first) {
      rt.context(1).stop();
      std::this_thread::sleep_for(50ms);
      EXPECT_EQ(rt.metrics_of(1).tasks_alive, 1u) << "the loop ran again, its task still sleeping";
    }
    rt.stop();
    EXPECT_EQ(sleeper_saw.load(), static_cast<int>(std::errc::operation_canceled));
    const ringio::loop_metrics m = rt.metrics_of(1);
    EXPECT_EQ(m.ops_started[timer], m.ops_completed[timer]) << "an operation of an ended loop still in flight";
    EXPECT_GE(m.ops_cancelled[timer], 1u);
    EXPECT_EQ(m.tasks_alive, 0u);
  }
}

// io_context::stop() on a runtime's loop returns its run() and the runtime runs it
// again: its context stays valid (a second stop, posts, run_on_each), and it ends with
// the others at the runtime's stop(). (Found by an outside review: the context was
// destroyed, and context(i) became a null reference.)
TEST(RuntimeMetricsCrossThread, ALoopStoppedAloneRunsAgain) {
  ringio::runtime rt({.threads = 3, .context = {.quiet = true}});
  for (int k = 0; k < 3; ++k) {
    rt.context(1).stop();
    std::this_thread::sleep_for(20ms);
  }
  std::atomic<int> posted{0};
  ringio::post(rt.context(1), [&posted] { ++posted; });
  std::atomic<unsigned> ran{0};
  rt.run_on_each([&ran](ringio::io_context&, unsigned) -> ringio::task<void> {
    (void)co_await ringio::sleep_for(1ms);
    ++ran;
  });
  EXPECT_EQ(ran.load(), 3u);
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       posted.load() == 0 && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(posted.load(), 1);
  rt.stop();
  EXPECT_GE(rt.metrics_of(1).ops_completed[timer], 1u);
}

// At the runtime's stop, a task resumed by its loop's cancellations can tell: its loop
// is shutting down (runtime.hpp: it must then not post to other loops, which may be
// gone).
TEST(RuntimeEnd, ATaskResumedByTheEndSeesItsLoopShuttingDown) {
  ringio::runtime rt({.threads = 2, .context = {.quiet = true}});
  std::atomic<int> seen{0};  // 1: cancelled and shutting down; 2: cancelled, not shutting down
  std::atomic<bool> sleeping{false};
  rt.run_on_each([&](ringio::io_context& ctx, unsigned i) -> ringio::task<void> {
    if (i == 1)
      ctx.spawn([](ringio::io_context& ctx, std::atomic<int>& seen, std::atomic<bool>& sleeping) -> ringio::task<void> {
        sleeping = true;
        auto slept = co_await ringio::sleep_for(10s);
        if (!slept) seen = ctx.shutting_down() ? 1 : 2;
      }(ctx, seen, sleeping));
    co_return;
  });
  while (!sleeping.load()) std::this_thread::yield();
  rt.stop();
  EXPECT_EQ(seen.load(), 1);
}

}  // namespace
