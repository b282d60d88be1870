// SPDX-License-Identifier: Apache-2.0
#include "latency_histogram.hpp"  // same directory: the peers and the tests build this file too

#include <algorithm>
#include <cmath>

namespace apps {

static_assert(latency_histogram::bucket_index(255) == 255);
static_assert(latency_histogram::bucket_index(256) == 256);
static_assert(latency_histogram::bucket_lowest(latency_histogram::bucket_index(1'000'000)) <= 1'000'000);
static_assert(latency_histogram::bucket_highest(latency_histogram::bucket_index(1'000'000)) >= 1'000'000);

void latency_histogram::merge(const latency_histogram& other) noexcept {
  for (std::size_t i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void latency_histogram::reset() noexcept { *this = latency_histogram{}; }

double latency_histogram::mean() const noexcept {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(count_);
}

std::uint64_t latency_histogram::percentile(double percent) const noexcept {
  if (count_ == 0) return 0;
  percent = std::clamp(percent, 0.0, 100.0);
  // The rank of the value asked for, 1-based: at least the first, at most the last.
  auto rank = static_cast<std::uint64_t>(std::ceil(percent / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      // The last bucket also holds the values above max_value: only max_ is exact there.
      if (i == bucket_count - 1) return max_;
      return std::clamp(bucket_highest(i), min(), max_);
    }
  }
  return max_;
}

}  // namespace apps
