// SPDX-License-Identifier: Apache-2.0
// apps::latency_histogram: the bucket layout (exact below 256 ns, 1/128 relative width
// above, contiguous up to 60 s), percentiles against exact order statistics, merging,
// overflow, and that recording never allocates. It replaces the global operator new to
// count allocations, so it is a test binary of its own.
#include "../../apps/common/latency_histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include "../support/counting_new.hpp"

using ringio_test::allocations;
using ringio_test::counting;

using apps::latency_histogram;

namespace {

constexpr std::uint64_t us = 1000;
constexpr std::uint64_t ms = 1000 * us;
constexpr std::uint64_t s = 1000 * ms;

// The exact value of rank ceil(p% * n) in sorted `v` (1-based), as percentile() defines it.
std::uint64_t exact_percentile(std::vector<std::uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}

// percentile() may overstate by one bucket width, never understate.
void expect_close(std::uint64_t reported, std::uint64_t exact) {
  EXPECT_GE(reported, exact);
  EXPECT_LE(static_cast<double>(reported), static_cast<double>(exact) * (1.0 + 1.0 / 128) + 1.0)
      << "reported " << reported << " for exact " << exact;
}

TEST(LatencyHistogramBuckets, ExactBelow256Nanoseconds) {
  for (std::uint64_t v = 0; v < 256; ++v) {
    EXPECT_EQ(latency_histogram::bucket_index(v), v);
    EXPECT_EQ(latency_histogram::bucket_lowest(v), v);
    EXPECT_EQ(latency_histogram::bucket_highest(v), v);
  }
}

TEST(LatencyHistogramBuckets, ContiguousAndWithinOnePercentUpTo60Seconds) {
  for (std::size_t i = 0; i + 1 < latency_histogram::bucket_count; ++i) {
    const std::uint64_t lo = latency_histogram::bucket_lowest(i), hi = latency_histogram::bucket_highest(i);
    ASSERT_LE(lo, hi);
    ASSERT_EQ(hi + 1, latency_histogram::bucket_lowest(i + 1)) << "gap after bucket " << i;
    ASSERT_EQ(latency_histogram::bucket_index(lo), i);
    ASSERT_EQ(latency_histogram::bucket_index(hi), i);
    // Relative width: under 1 % from 1 us (the range the benchmarks report) upwards.
    if (lo >= us) {
      ASSERT_LE(static_cast<double>(hi - lo + 1) / static_cast<double>(lo), 1.0 / 128);
    }
  }
  EXPECT_GE(latency_histogram::bucket_highest(latency_histogram::bucket_count - 1), latency_histogram::max_value);
  // A fixed, small footprint: a few thousand counters.
  EXPECT_LT(latency_histogram::bucket_count, 4096u);
}

TEST(LatencyHistogramBuckets, EveryValueFallsInsideItsBucket) {
  std::mt19937_64 rng(42);
  for (int k = 0; k < 100000; ++k) {
    const std::uint64_t v = rng() % (latency_histogram::max_value + 1);
    const std::size_t i = latency_histogram::bucket_index(v);
    ASSERT_LE(latency_histogram::bucket_lowest(i), v);
    ASSERT_GE(latency_histogram::bucket_highest(i), v);
  }
  for (unsigned bit = 0; bit < 36; ++bit) {  // the powers of two and their neighbours
    for (std::uint64_t v : {(std::uint64_t{1} << bit) - 1, std::uint64_t{1} << bit, (std::uint64_t{1} << bit) + 1}) {
      const std::size_t i = latency_histogram::bucket_index(v);
      ASSERT_LE(latency_histogram::bucket_lowest(i), v);
      ASSERT_GE(latency_histogram::bucket_highest(i), v);
    }
  }
}

TEST(LatencyHistogram, EmptyReportsZero) {
  auto h = std::make_unique<latency_histogram>();
  EXPECT_EQ(h->count(), 0u);
  EXPECT_EQ(h->min(), 0u);
  EXPECT_EQ(h->max(), 0u);
  EXPECT_EQ(h->mean(), 0.0);
  EXPECT_EQ(h->percentile(50), 0u);
  EXPECT_EQ(h->percentile(100), 0u);
}

TEST(LatencyHistogram, SingleValueIsExactAtEveryPercentile) {
  auto h = std::make_unique<latency_histogram>();
  h->record(123'456);
  for (double p : {0.0, 1.0, 50.0, 99.0, 99.9, 100.0}) EXPECT_EQ(h->percentile(p), 123'456u) << p;
  EXPECT_EQ(h->min(), 123'456u);
  EXPECT_EQ(h->max(), 123'456u);
  EXPECT_EQ(h->mean(), 123'456.0);
}

TEST(LatencyHistogram, PercentilesMatchExactOrderStatistics) {
  // Log-uniform between 1 us and 10 s: every scale the benchmarks see.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(std::log(1.0 * us), std::log(10.0 * s));
  std::vector<std::uint64_t> values(200000);
  for (auto& v : values) v = static_cast<std::uint64_t>(std::exp(exponent(rng)));
  auto h = std::make_unique<latency_histogram>();
  for (auto v : values) h->record(v);

  EXPECT_EQ(h->count(), values.size());
  EXPECT_EQ(h->min(), *std::min_element(values.begin(), values.end()));
  EXPECT_EQ(h->max(), *std::max_element(values.begin(), values.end()));
  long double sum = 0;
  for (auto v : values) sum += v;
  EXPECT_NEAR(h->mean(), static_cast<double>(sum / values.size()), 1.0);
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99})
    expect_close(h->percentile(p), exact_percentile(values, p));
  EXPECT_EQ(h->percentile(100), h->max());
}

TEST(LatencyHistogram, UniformMicroseconds) {
  auto h = std::make_unique<latency_histogram>();
  std::vector<std::uint64_t> values;
  for (std::uint64_t v = 1; v <= 10000; ++v) values.push_back(v * us);
  for (auto v : values) h->record(v);
  expect_close(h->percentile(50), 5000 * us);
  expect_close(h->percentile(90), 9000 * us);
  expect_close(h->percentile(99), 9900 * us);
  expect_close(h->percentile(99.9), 9990 * us);
  EXPECT_EQ(h->percentile(100), 10000 * us);
}

TEST(LatencyHistogram, ValuesAbove60SecondsKeepAnExactMaximum) {
  auto h = std::make_unique<latency_histogram>();
  h->record(5 * us);
  h->record(120 * s);
  EXPECT_EQ(h->max(), 120 * s);
  EXPECT_EQ(h->percentile(100), 120 * s);
  expect_close(h->percentile(50), 5 * us);
  h->record(UINT64_MAX / 4);  // no overflow in the bucket arithmetic
  EXPECT_EQ(h->max(), UINT64_MAX / 4);
}

TEST(LatencyHistogram, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(3);
  auto a = std::make_unique<latency_histogram>(), b = std::make_unique<latency_histogram>(),
       all = std::make_unique<latency_histogram>();
  for (int k = 0; k < 50000; ++k) {
    const std::uint64_t v = rng() % (2 * s);
    (k % 3 == 0 ? *a : *b).record(v);
    all->record(v);
  }
  a->merge(*b);
  EXPECT_EQ(a->count(), all->count());
  EXPECT_EQ(a->min(), all->min());
  EXPECT_EQ(a->max(), all->max());
  EXPECT_EQ(a->mean(), all->mean());
  for (double p : {50.0, 90.0, 99.0, 99.9}) EXPECT_EQ(a->percentile(p), all->percentile(p));

  auto empty = std::make_unique<latency_histogram>();
  a->merge(*empty);  // merging an empty one changes nothing, its min included
  EXPECT_EQ(a->min(), all->min());
  empty->merge(*all);
  EXPECT_EQ(empty->min(), all->min());
  EXPECT_EQ(empty->percentile(99), all->percentile(99));
}

TEST(LatencyHistogram, ResetForgetsEverything) {
  auto h = std::make_unique<latency_histogram>();
  h->record(10 * us);
  h->record(20 * ms);
  h->reset();
  EXPECT_EQ(h->count(), 0u);
  EXPECT_EQ(h->max(), 0u);
  EXPECT_EQ(h->percentile(99), 0u);
  h->record(7 * us);
  EXPECT_EQ(h->min(), 7 * us);
  EXPECT_EQ(h->percentile(50), 7 * us);
}

TEST(LatencyHistogram, RecordingMergingAndReadingNeverAllocate) {
  auto h = std::make_unique<latency_histogram>(), other = std::make_unique<latency_histogram>();
  other->record(1 * ms);
  allocations = 0;
  counting = true;
  std::uint64_t sink = 0;
  for (std::uint64_t k = 0; k < 1'000'000; ++k) h->record((k * 7919) % (3 * s));
  h->merge(*other);
  sink += h->percentile(99) + h->percentile(50) + h->max();
  h->reset();
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_GT(sink, 0u);
}

}  // namespace
