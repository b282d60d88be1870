// SPDX-License-Identifier: Apache-2.0
// prometheus_writer: the exact lines of the text format 0.0.4, escapes, histograms.
#include "ringio/metrics/prometheus_writer.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>

#include "ringio/metrics/loop_metrics_exposition.hpp"

namespace {

using ringio::metric_label;
using ringio::prometheus_writer;

TEST(PrometheusWriter, WritesHelpTypeAndSamplesWithLabels) {
  prometheus_writer w;
  w.family("x_total", "counter", "Things.");
  const metric_label a[] = {{"loop", "0"}};
  const metric_label b[] = {{"loop", "1"}, {"kind", "io"}};
  w.sample("x_total", a, std::uint64_t{3});
  w.sample("x_total", b, std::uint64_t{18446744073709551615u});
  w.sample("x_total", {}, 0.5);
  EXPECT_EQ(w.text(),
            "# HELP x_total Things.\n"
            "# TYPE x_total counter\n"
            "x_total{loop=\"0\"} 3\n"
            "x_total{loop=\"1\",kind=\"io\"} 18446744073709551615\n"
            "x_total 0.5\n");
}

TEST(PrometheusWriter, EscapesHelpAndLabelValues) {
  prometheus_writer w;
  w.family("g", "gauge", "a \\ b\nc \"q\"");
  const metric_label l[] = {{"path", "a\"b\\c\nd"}};
  w.sample("g", l, std::uint64_t{1});
  EXPECT_EQ(w.text(),
            "# HELP g a \\\\ b\\nc \"q\"\n"
            "# TYPE g gauge\n"
            "g{path=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(PrometheusWriter, SpellsSpecialValues) {
  prometheus_writer w;
  w.sample("v", {}, std::numeric_limits<double>::infinity());
  w.sample("v", {}, -std::numeric_limits<double>::infinity());
  w.sample("v", {}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(w.text(), "v +Inf\nv -Inf\nv NaN\n");
}

TEST(PrometheusWriter, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  prometheus_writer w;
  const std::array<double, 2> bounds{0.1, 1.0};
  const std::array<std::uint64_t, 3> counts{2, 3, 4};
  const metric_label l[] = {{"loop", "0"}};
  w.histogram("h", l, bounds, counts, 7.25);
  EXPECT_EQ(w.text(),
            "h_bucket{loop=\"0\",le=\"0.1\"} 2\n"
            "h_bucket{loop=\"0\",le=\"1\"} 5\n"
            "h_bucket{loop=\"0\",le=\"+Inf\"} 9\n"
            "h_sum{loop=\"0\"} 7.25\n"
            "h_count{loop=\"0\"} 9\n");
  EXPECT_EQ(w.take().empty(), false);
  EXPECT_TRUE(w.text().empty());
}

TEST(LoopMetricsExposition, OneSamplePerLoopAndKindEachFamilyOnce) {
  ringio::loop_metrics a, b;
  a.ops_started[0] = 5;
  b.ops_started[1] = 6;
  b.bytes_in = 42;
  b.stall_buckets_count[0] = 3;
  b.stall_sum_ns = 1'500;
  const std::array<ringio::loop_metrics, 2> loops{a, b};
  prometheus_writer w;
  ringio::write_loop_metrics(w, loops);
  const std::string& t = w.text();
  EXPECT_NE(t.find("ringio_operations_started_total{loop=\"0\",kind=\"io\"} 5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("ringio_operations_started_total{loop=\"1\",kind=\"timer\"} 6\n"), std::string::npos);
  EXPECT_NE(t.find("ringio_loop_bytes_received_total{loop=\"1\"} 42\n"), std::string::npos);
  EXPECT_NE(t.find("ringio_loop_run_seconds_bucket{loop=\"1\",le=\"1e-05\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("ringio_loop_run_seconds_count{loop=\"1\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("ringio_loop_run_seconds_sum{loop=\"1\"} 1.5e-06\n"), std::string::npos);
  // Each family's TYPE line exactly once.
  std::size_t types = 0;
  for (std::size_t at = t.find("# TYPE ringio_loop_iterations_total"); at != std::string::npos;
       at = t.find("# TYPE ringio_loop_iterations_total", at + 1))
    ++types;
  EXPECT_EQ(types, 1u);
}

TEST(LoopMetricsSnapshot, SnapshotsAddUp) {
  ringio::loop_metrics a, b;
  a.ops_completed[2] = 1;
  b.ops_completed[2] = 2;
  a.stall_buckets_count[4] = 1;
  b.stall_buckets_count[4] = 1;
  a.tasks_alive = 3;
  b.asleep_ns = 9;
  a += b;
  EXPECT_EQ(a.ops_completed[2], 3u);
  EXPECT_EQ(a.stall_buckets_count[4], 2u);
  EXPECT_EQ(a.stall_count(), 2u);
  EXPECT_EQ(a.tasks_alive, 3u);
  EXPECT_EQ(a.asleep_ns, 9u);
}

}  // namespace
