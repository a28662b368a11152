// SPDX-License-Identifier: BSD-3-Clause
//
// perftest's latency and bandwidth figures (see stats.hpp for the formulas and
// their source).
#include "perf/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kbv::perf {

namespace {

// Median of the first n sorted samples (perftest get_median: the mean of the
// two middle samples when n is even).
double median(const std::vector<uint64_t>& sorted, size_t n) {
  if (n % 2 == 0) {
    return (static_cast<double>(sorted[n / 2 - 1]) + static_cast<double>(sorted[n / 2])) / 2.0;
  }
  return static_cast<double>(sorted[n / 2]);
}

}  // namespace

std::optional<LatencyStats> latency_stats(std::span<const uint64_t> stamps_ns,
                                          unsigned rtt_factor) {
  if (rtt_factor == 0 || stamps_ns.size() < kMinIters) return std::nullopt;
  std::vector<uint64_t> delta(stamps_ns.size() - 1);
  for (size_t i = 0; i + 1 < stamps_ns.size(); ++i) {
    if (stamps_ns[i + 1] < stamps_ns[i]) return std::nullopt;
    delta[i] = stamps_ns[i + 1] - stamps_ns[i];
  }
  std::sort(delta.begin(), delta.end());
  const size_t n = delta.size() - kLatMeasureTail;  // >= 2 with kMinIters = 5
  // ns per sample -> us per one-way (or whole) operation.
  const double unit = 1000.0 * rtt_factor;

  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(delta[i]) / unit;
  const double avg = sum / static_cast<double>(n);
  double var = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(delta[i]) / unit - avg;
    var += d * d;
  }
  const auto idx = [&](double q) {
    size_t k = static_cast<size_t>(std::ceil(static_cast<double>(n) * q));
    return std::min(k, delta.size() - 1);
  };

  LatencyStats s;
  s.iterations = stamps_ns.size();
  s.t_min_us = static_cast<double>(delta[0]) / unit;
  s.t_max_us = static_cast<double>(delta[n]) / unit;
  s.t_typical_us = median(delta, n) / unit;
  s.t_avg_us = avg;
  s.t_stdev_us = std::sqrt(var / static_cast<double>(n));
  s.p99_us = static_cast<double>(delta[idx(0.99)]) / unit;
  s.p999_us = static_cast<double>(delta[idx(0.999)]) / unit;
  return s;
}

std::vector<double> latency_samples(std::span<const uint64_t> stamps_ns, unsigned rtt_factor) {
  std::vector<double> v;
  if (rtt_factor == 0 || stamps_ns.size() < 2) return v;
  v.reserve(stamps_ns.size() - 1);
  for (size_t i = 0; i + 1 < stamps_ns.size(); ++i) {
    v.push_back(static_cast<double>(stamps_ns[i + 1] - stamps_ns[i]) / (1000.0 * rtt_factor));
  }
  return v;
}

std::optional<BandwidthStats> bandwidth_stats(std::span<const uint64_t> posted_ns,
                                              std::span<const uint64_t> completed_ns,
                                              uint64_t msg_size, bool no_peak) {
  const size_t n = posted_ns.size();
  if (n == 0 || completed_ns.size() != n) return std::nullopt;
  for (size_t k = 0; k < n; ++k) {
    if (completed_ns[k] < posted_ns[k]) return std::nullopt;
  }
  const uint64_t first = posted_ns[0];
  const uint64_t last = *std::max_element(completed_ns.begin(), completed_ns.end());
  if (last <= first) return std::nullopt;
  constexpr double kMB = 1024.0 * 1024.0;  // perftest MBS format_factor 0x100000
  const double secs = static_cast<double>(last - first) / 1e9;

  BandwidthStats s;
  s.messages = n;
  s.bw_avg_mbs = static_cast<double>(msg_size) * static_cast<double>(n) / secs / kMB;
  s.msg_rate_mpps = static_cast<double>(n) / secs / 1e6;
  s.bw_peak_mbs = s.bw_avg_mbs;
  if (!no_peak && n <= kMaxPeakSamples) {
    double best = std::numeric_limits<double>::infinity();  // ns per message
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i; j < n; ++j) {
        if (completed_ns[j] <= posted_ns[i]) continue;
        const double t =
            static_cast<double>(completed_ns[j] - posted_ns[i]) / static_cast<double>(j - i + 1);
        best = std::min(best, t);
      }
    }
    if (std::isfinite(best) && best > 0) {
      s.bw_peak_mbs = static_cast<double>(msg_size) / (best / 1e9) / kMB;
      s.peak_computed = true;
    }
  }
  return s;
}

std::vector<uint64_t> sweep_sizes(uint64_t max_size) {
  std::vector<uint64_t> v;
  for (uint64_t s = 2; s != 0 && s <= max_size; s <<= 1) v.push_back(s);
  return v;
}

}  // namespace kbv::perf
