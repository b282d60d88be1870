// SPDX-License-Identifier: Apache-2.0
// latency_histogram — a fixed-size log-linear histogram of durations in nanoseconds,
// in the style of HdrHistogram: values below 256 ns have a bucket each, above that
// every power of two is split into 128 buckets, so a recorded value is known to within
// 1/128 (0.8 %) of itself. Values up to max_value (60 s) are tracked; larger ones land
// in the last bucket (the exact maximum is kept apart). Recording is a few integer
// operations and never allocates: one histogram per thread, merged at the end.
//
// No dependency on ringio, so that the plain epoll client reports the same percentiles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace apps {

/// The bucket layout, apart from the class so that it is usable in constant
/// expressions inside it.
namespace latency_buckets {

/// Bits of precision: 2^sub_bucket_bits buckets per power of two (half of them used
/// above the linear range), i.e. a relative bucket width of at most 1/128.
inline constexpr unsigned sub_bucket_bits = 8;
inline constexpr std::uint64_t sub_bucket_count = std::uint64_t{1} << sub_bucket_bits;  // 256
inline constexpr std::uint64_t sub_bucket_half = sub_bucket_count / 2;                  // 128
/// The largest value tracked with full precision: 60 s in nanoseconds.
inline constexpr std::uint64_t max_value = 60'000'000'000ULL;

/// Index of the bucket that holds `ns` (values above max_value: the last bucket).
constexpr std::size_t index(std::uint64_t ns) noexcept {
  if (ns > max_value) ns = max_value;
  if (ns < sub_bucket_count) return static_cast<std::size_t>(ns);
  // Keep the top sub_bucket_bits bits: ns >> shift lies in [128, 256).
  const unsigned shift = static_cast<unsigned>(63 - __builtin_clzll(ns)) - (sub_bucket_bits - 1);
  return static_cast<std::size_t>(sub_bucket_count + (shift - 1) * sub_bucket_half + ((ns >> shift) - sub_bucket_half));
}
/// The smallest value that maps to bucket i.
constexpr std::uint64_t lowest(std::size_t i) noexcept {
  if (i < sub_bucket_count) return i;
  const std::size_t j = i - sub_bucket_count;
  const unsigned shift = static_cast<unsigned>(j / sub_bucket_half) + 1;
  return (sub_bucket_half + j % sub_bucket_half) << shift;
}
/// The largest value that maps to bucket i.
constexpr std::uint64_t highest(std::size_t i) noexcept {
  if (i < sub_bucket_count) return i;
  const std::size_t j = i - sub_bucket_count;
  const unsigned shift = static_cast<unsigned>(j / sub_bucket_half) + 1;
  return lowest(i) + (std::uint64_t{1} << shift) - 1;
}
inline constexpr std::size_t count = index(max_value) + 1;

}  // namespace latency_buckets

class latency_histogram {
 public:
  static constexpr std::uint64_t max_value = latency_buckets::max_value;
  static constexpr std::size_t bucket_count = latency_buckets::count;
  static constexpr std::size_t bucket_index(std::uint64_t ns) noexcept { return latency_buckets::index(ns); }
  static constexpr std::uint64_t bucket_lowest(std::size_t i) noexcept { return latency_buckets::lowest(i); }
  static constexpr std::uint64_t bucket_highest(std::size_t i) noexcept { return latency_buckets::highest(i); }

  /// Records one duration in nanoseconds.
  void record(std::uint64_t ns) noexcept {
    ++counts_[bucket_index(ns)];
    ++count_;
    sum_ += ns;
    if (ns < min_) min_ = ns;
    if (ns > max_) max_ = ns;
  }

  /// Adds every value of `other`.
  void merge(const latency_histogram& other) noexcept;
  /// Forgets every value.
  void reset() noexcept;

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  /// Smallest and largest value recorded, exactly (0 when empty).
  [[nodiscard]] std::uint64_t min() const noexcept { return count_ == 0 ? 0 : min_; }
  [[nodiscard]] std::uint64_t max() const noexcept { return max_; }
  /// Exact mean of the recorded values (0 when empty).
  [[nodiscard]] double mean() const noexcept;
  /// The value below or at which `percent` % of the values lie (0 < percent <= 100):
  /// the highest value of the bucket holding that rank, clamped to [min(), max()], so
  /// it overstates by at most one bucket width (< 0.8 %). 0 when empty.
  [[nodiscard]] std::uint64_t percentile(double percent) const noexcept;

 private:
  std::array<std::uint64_t, bucket_count> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
};

}  // namespace apps
