// SPDX-License-Identifier: Apache-2.0
// ringio-top's reading of a metrics page: the parser, the scrape, the rates between two
// scrapes, the sort and the JSON (apps/top/).
#include "top/top_view.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "top/column.hpp"
#include "top/metric_sample.hpp"
#include "top/render.hpp"
#include "top/scrape.hpp"

namespace {

// A page of two loops, as write_loop_metrics writes it (the families top reads).
std::string page(double completed0, double completed1, double over10ms, double run_sum, double responses) {
  std::string p =
      "# HELP ringio_operations_started_total x\n"
      "# TYPE ringio_operations_started_total counter\n";
  p += "ringio_operations_started_total{loop=\"0\",kind=\"io\"} " + std::to_string(completed0 + 3) + "\n";
  p += "ringio_operations_started_total{loop=\"0\",kind=\"timer\"} 1\n";
  p += "ringio_operations_started_total{loop=\"1\",kind=\"io\"} " + std::to_string(completed1) + "\n";
  p += "ringio_operations_completed_total{loop=\"0\",kind=\"io\"} " + std::to_string(completed0) + "\n";
  p += "ringio_operations_completed_total{loop=\"1\",kind=\"io\"} " + std::to_string(completed1) + "\n";
  p += "ringio_operations_cancelled_total{loop=\"0\",kind=\"io\"} 2\n";
  p += "ringio_loop_iterations_total{loop=\"0\"} " + std::to_string(completed0) + "\n";
  p += "ringio_loop_iterations_total{loop=\"1\"} " + std::to_string(completed1) + "\n";
  p += "ringio_loop_tasks_alive{loop=\"0\"} 5\n";
  p += "ringio_loop_bytes_received_total{loop=\"0\"} " + std::to_string(completed0 * 10) + "\n";
  p += "ringio_loop_run_seconds_bucket{loop=\"0\",le=\"0.0025\"} " + std::to_string(completed0 - over10ms) + "\n";
  p += "ringio_loop_run_seconds_bucket{loop=\"0\",le=\"0.01\"} " + std::to_string(completed0 - over10ms) + "\n";
  p += "ringio_loop_run_seconds_bucket{loop=\"0\",le=\"0.05\"} " + std::to_string(completed0) + "\n";
  p += "ringio_loop_run_seconds_bucket{loop=\"0\",le=\"+Inf\"} " + std::to_string(completed0) + "\n";
  p += "ringio_loop_run_seconds_sum{loop=\"0\"} " + std::to_string(run_sum) + "\n";
  p += "ringio_http_responses_total{class=\"2xx\"} " + std::to_string(responses) + "\n";
  p += "ringio_http_responses_total{class=\"5xx\"} 1\n";
  p += "ringio_http_connections_active 7\n";
  p += "ringio_http_connections_idle 2 1700000000000\n";  // a timestamp is ignored
  return p;
}

top::scrape read(const std::string& text, double at) { return top::read_scrape(top::parse_prometheus_text(text), at); }

TEST(TopParser, ReadsNamesLabelsAndValues) {
  auto s = top::parse_prometheus_text(
      "# comment\n\nx_total{a=\"1\",b=\"q\\\"uote\"} 2.5\r\ny +Inf\nbroken{a=\"1\" 3\nz{} 4 123\n");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].name, "x_total");
  EXPECT_EQ(s[0].label("a"), "1");
  EXPECT_EQ(s[0].label("b"), "q\"uote");
  EXPECT_EQ(s[0].label("c"), "");
  EXPECT_DOUBLE_EQ(s[0].value, 2.5);
  EXPECT_TRUE(std::isinf(s[1].value));
  EXPECT_EQ(s[2].name, "z");
  EXPECT_DOUBLE_EQ(s[2].value, 4);
}

TEST(TopView, RatesBetweenTwoScrapes) {
  auto before = read(page(1000, 500, 1, 0.5, 100), 10.0);
  auto after = read(page(3000, 1500, 4, 1.0, 600), 12.0);
  ASSERT_EQ(after.loops.size(), 2u);
  top::top_view v = top::compare(before, after);
  EXPECT_DOUBLE_EQ(v.interval_seconds, 2.0);
  ASSERT_EQ(v.loops.size(), 2u);
  EXPECT_DOUBLE_EQ(v.loops[0].ops_per_second, 1000);
  EXPECT_DOUBLE_EQ(v.loops[1].ops_per_second, 500);
  EXPECT_DOUBLE_EQ(v.total.ops_per_second, 1500);
  EXPECT_DOUBLE_EQ(v.loops[0].in_flight, 4);  // started (3003 + 1) - completed 3000
  EXPECT_DOUBLE_EQ(v.loops[0].cancelled_per_second, 0);
  EXPECT_DOUBLE_EQ(v.loops[0].stalls, 3);  // runs over 10 ms: 4 - 1
  EXPECT_DOUBLE_EQ(v.loops[0].slowest_run_seconds, 0.05);
  ASSERT_TRUE(v.loops[0].run_percent.has_value());
  EXPECT_DOUBLE_EQ(*v.loops[0].run_percent, 25);     // 0.5 s of 2
  EXPECT_FALSE(v.loops[1].run_percent.has_value());  // iterations without timing
  EXPECT_DOUBLE_EQ(v.loops[0].tasks, 5);
  EXPECT_DOUBLE_EQ(v.loops[0].bytes_in_per_second, 10000);
  EXPECT_TRUE(v.has_http);
  EXPECT_DOUBLE_EQ(v.requests_per_second, 250);
  EXPECT_DOUBLE_EQ(v.errors_5xx_per_second, 0);
  EXPECT_DOUBLE_EQ(v.connections_active, 7);
  EXPECT_DOUBLE_EQ(v.connections_idle, 2);
  EXPECT_FALSE(v.cpu_percent.has_value());
}

TEST(TopView, RestartedProcessCountsFromZero) {
  auto before = read(page(5000, 5000, 0, 1, 900), 0.0);
  auto after = read(page(100, 50, 0, 0.1, 10), 1.0);
  top::top_view v = top::compare(before, after);
  EXPECT_DOUBLE_EQ(v.loops[0].ops_per_second, 100);
  EXPECT_DOUBLE_EQ(v.requests_per_second, 11);  // 10 2xx + 1 5xx
}

TEST(TopView, CpuFromThePage) {
  auto before = read("ringio_loop_iterations_total{loop=\"0\"} 1\nprocess_cpu_seconds_total 10\n", 0.0);
  auto after = read("ringio_loop_iterations_total{loop=\"0\"} 1\nprocess_cpu_seconds_total 10.5\n", 2.0);
  top::top_view v = top::compare(before, after);
  EXPECT_TRUE(v.cpu_from_page);
  ASSERT_TRUE(v.cpu_percent.has_value());
  EXPECT_DOUBLE_EQ(*v.cpu_percent, 25);
  EXPECT_FALSE(v.has_http);
  ASSERT_TRUE(v.loops[0].run_percent.has_value());
  EXPECT_DOUBLE_EQ(*v.loops[0].run_percent, 0);  // no iteration: asleep
}

TEST(TopColumns, SortAndReverse) {
  std::vector<top::loop_row> rows(3);
  for (int i = 0; i < 3; ++i) rows[static_cast<std::size_t>(i)].loop = i;
  rows[0].ops_per_second = 5;
  rows[1].ops_per_second = 50;
  rows[2].ops_per_second = 5;
  top::sort_rows(rows, top::column::ops, false);
  EXPECT_EQ(rows[0].loop, 1);
  EXPECT_EQ(rows[1].loop, 0);  // ties by loop index
  top::sort_rows(rows, top::column::ops, true);
  EXPECT_EQ(rows[2].loop, 1);
  top::sort_rows(rows, top::column::loop, false);
  EXPECT_EQ(rows[0].loop, 0);
  top::sort_rows(rows, top::column::loop, true);
  EXPECT_EQ(rows[0].loop, 2);
  EXPECT_EQ(top::column_named("stalls"), top::column::stalls);
  EXPECT_EQ(top::column_for_key('u'), top::column::run);
  EXPECT_FALSE(top::column_named("nope").has_value());
}

TEST(TopRender, TextAndJson) {
  auto v = top::compare(read(page(1000, 500, 0, 0.5, 100), 0.0), read(page(31000, 500, 0, 0.6, 20100), 1.0));
  top::render_options opts;
  opts.target = "http://127.0.0.1:9100/metrics";
  opts.cpu_source = "test";
  auto lines = top::render_lines(v, opts);
  ASSERT_GE(lines.size(), 7u);
  EXPECT_EQ(lines[2], "HTTP 20.0k req/s, 5xx 0/s, connections 7 (idle 2)");
  EXPECT_EQ(lines[5].substr(0, 6), "0     ");
  EXPECT_NE(lines[5].find("30.0k"), std::string::npos);
  EXPECT_EQ(lines.back().substr(0, 5), "total");
  const std::string json = top::render_json(v, opts);
  EXPECT_NE(json.find("\"operations_per_second\":30000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"http\":{\"requests_per_second\":20000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"cpu_percent\":null"), std::string::npos) << json;
}

}  // namespace
