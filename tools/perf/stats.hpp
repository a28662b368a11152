// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf statistics: the latency and bandwidth figures perftest reports,
// computed the way perftest computes them (linux-rdma/perftest
// src/perftest_parameters.c, print_report_lat and print_report_bw), from
// nanosecond timestamps (CLOCK_MONOTONIC) instead of CPU cycles.
//
// Latency (print_report_lat): iteration i is timed by its post stamps,
// delta[i] = t[i+1] - t[i] (iters - 1 samples), sorted ascending; the two
// largest samples are dropped (LAT_MEASURE_TAIL = 2), leaving n samples;
// t_typical is their median, t_avg their mean, t_stdev the population standard
// deviation around the mean; t_min = delta[0], t_max = delta[n],
// p99 = delta[ceil(0.99 n)], p99.9 = delta[ceil(0.999 n)]. Every figure is
// divided by the round-trip factor: 2 for ping-pong tests (SEND, RDMA WRITE:
// one sample is a round trip), 1 for RDMA READ and atomics (the requester sees
// the whole operation).
//
// Bandwidth (print_report_bw): with the post and completion stamp of each of
// the N work requests (over all QPs), BW average = size * N / (completed[N-1]
// - posted[0]), message rate = N / that time; BW peak = size / min over
// i <= j of (completed[j] - posted[i]) / (j - i + 1). MB/sec means 2^20
// bytes per second, as perftest's default MBS format; Mpps is 10^6 messages
// per second. Peak costs O(N^2): as perftest, it is computed only up to
// kMaxPeakSamples work requests (otherwise reported as the average).
//
// Pure functions; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace kbv::perf {

// Samples dropped from the top of the sorted latency deltas (perftest
// LAT_MEASURE_TAIL).
inline constexpr size_t kLatMeasureTail = 2;
// Fewest iterations a latency test accepts (perftest MIN_ITER).
inline constexpr uint64_t kMinIters = 5;
// Work requests up to which the O(N^2) peak search runs (perftest: "default
// with peak up to iters=20000").
inline constexpr size_t kMaxPeakSamples = 20000;

// Latency figures in microseconds.
struct LatencyStats {
  uint64_t iterations = 0;  // post stamps given (perftest #iterations)
  double t_min_us = 0;
  double t_max_us = 0;
  double t_typical_us = 0;  // median
  double t_avg_us = 0;
  double t_stdev_us = 0;
  double p99_us = 0;
  double p999_us = 0;
};

// stamps_ns: one post timestamp per iteration, non-decreasing, at least
// kMinIters of them; rtt_factor 1 or 2 (see above). nullopt when there are too
// few stamps, they go backwards, or rtt_factor is 0.
std::optional<LatencyStats> latency_stats(std::span<const uint64_t> stamps_ns, unsigned rtt_factor);

// The samples behind latency_stats, in iteration order: (stamps[i+1] -
// stamps[i]) / rtt_factor in microseconds (iters - 1 of them; empty when
// rtt_factor is 0 or fewer than 2 stamps). For --raw, --plot and -H.
std::vector<double> latency_samples(std::span<const uint64_t> stamps_ns, unsigned rtt_factor);

struct BandwidthStats {
  uint64_t messages = 0;     // work requests measured (iterations x QPs)
  double bw_peak_mbs = 0;    // MB/sec (2^20 bytes/s)
  double bw_avg_mbs = 0;     // MB/sec
  double msg_rate_mpps = 0;  // 10^6 messages/s
  bool peak_computed = false;
};

// posted_ns[k] / completed_ns[k]: when work request k was posted and when its
// completion was seen (completed_ns[k] >= posted_ns[k]); both the same size,
// at least 1, sorted by k in post order. msg_size in bytes. no_peak skips the
// peak search (perftest -N). nullopt on mismatched/empty input or a zero
// interval.
std::optional<BandwidthStats> bandwidth_stats(std::span<const uint64_t> posted_ns,
                                              std::span<const uint64_t> completed_ns,
                                              uint64_t msg_size, bool no_peak);

// Sizes of a perftest -a sweep: 2, 4, 8, ..., the largest power of two not
// above max_size (perftest: 2 till 2^23). Empty when max_size < 2.
std::vector<uint64_t> sweep_sizes(uint64_t max_size);

}  // namespace kbv::perf
