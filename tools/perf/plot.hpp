// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf --raw and --plot: the samples behind a report, and a picture of
// them drawn by gnuplot (Debian gnuplot-nox) with the script installed with
// kbv (tools/kbv-perf-plot.gp):
//   latency tests: the histogram and the CDF of the first size's samples,
//     with p50, p99 and p99.9 marked (and t_typical / p99 against the size
//     when there are several sizes);
//   bandwidth tests: BW average and peak, and the message rate, against the
//     size.
// The picture's format follows the file name: .svg (svg terminal) or .png
// (pngcairo).
//
// Raw file: '#' comment lines, then for latency one line per iteration,
// "<bytes> <iteration> <usec>" (the samples of latency_samples), and for
// bandwidth one line per work request (this side's, over every QP, in post
// order), "<bytes> <wr> <posted_usec> <completed_usec>" from the first post
// of that size (the stamps bandwidth_stats takes; completed is when the
// completion that retired it was polled).
//
// Errors come back as text for the user (one line); nothing throws.
// Thread-compatible.
#pragma once

#include <optional>
#include <string>

#include "perf/report.hpp"

namespace kbv::perf {

// Writes the raw samples of r to path. nullopt on success, else why not.
std::optional<std::string> write_raw(const std::string& path, const Report& r);

// Where the plot script is: $KBV_PERF_PLOT_SCRIPT, else kbv-perf-plot.gp
// beside the running program (the build tree), else
// <program dir>/../share/kbv/kbv-perf-plot.gp (installed). Empty when none
// exists.
std::string find_plot_script();

// Draws r into path (.svg or .png) with gnuplot and script. nullopt on
// success (the file exists and is not empty), else why not.
std::optional<std::string> draw_plot(const std::string& path, const Report& r,
                                     const std::string& script);

}  // namespace kbv::perf
