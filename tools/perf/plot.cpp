// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf --raw and --plot (plot.hpp).
#include "perf/plot.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

extern char** environ;

namespace kbv::perf {

namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Writes text to path; nullopt or why not.
std::optional<std::string> write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return fmt::format("cannot write {}: {}", path, std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return fmt::format("cannot write {}: {}", path, std::strerror(errno));
  return std::nullopt;
}

std::string lat_raw(const Report& r) {
  std::string s = fmt::format("# kbv-perf {} {} latency samples (usec per iteration{})\n",
                              to_string(r.params.test), to_string(r.params.connection),
                              r.params.rtt_factor() == 2 ? ", round trip / 2" : "");
  s += "# bytes iteration usec\n";
  for (const LatRow& row : r.lat) {
    for (size_t i = 0; i < row.samples_us.size(); ++i) {
      s += fmt::format("{} {} {:.4f}\n", row.bytes, i + 1, row.samples_us[i]);
    }
  }
  return s;
}

std::string bw_raw(const Report& r) {
  std::string s = fmt::format(
      "# kbv-perf {} {} bandwidth: every work request's post and completion (usec from the "
      "first post of its size)\n",
      to_string(r.params.test), to_string(r.params.connection));
  s += "# bytes wr posted_usec completed_usec\n";
  for (const BwRow& row : r.bw) {
    const size_t n = std::min(row.posted_ns.size(), row.completed_ns.size());
    const uint64_t t0 = n > 0 ? row.posted_ns[0] : 0;
    for (size_t i = 0; i < n; ++i) {
      s += fmt::format("{} {} {:.3f} {:.3f}\n", row.bytes, i,
                       static_cast<double>(row.posted_ns[i] - t0) / 1e3,
                       static_cast<double>(row.completed_ns[i] - t0) / 1e3);
    }
  }
  return s;
}

// The value of a sorted sample set at quantile q (perftest's index rule).
double quantile(const std::vector<double>& sorted, double q) {
  size_t k = static_cast<size_t>(std::ceil(static_cast<double>(sorted.size()) * q));
  return sorted[std::min(k, sorted.size() - 1)];
}

// Runs argv; nullopt when it exited 0, else why not.
std::optional<std::string> run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (rc != 0) {
    return fmt::format("cannot run {}: {} (Debian package gnuplot-nox)", argv[0],
                       std::strerror(rc));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return fmt::format("waitpid: {}", std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fmt::format("{} failed (exit status {})", argv[0],
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> write_raw(const std::string& path, const Report& r) {
  return write_file(path, r.params.lat ? lat_raw(r) : bw_raw(r));
}

std::string find_plot_script() {
  if (const char* env = std::getenv("KBV_PERF_PLOT_SCRIPT"); env != nullptr && *env != 0) {
    return env;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const fs::path& p :
       {exe.parent_path() / "kbv-perf-plot.gp",
        exe.parent_path().parent_path() / "share" / "kbv" / "kbv-perf-plot.gp"}) {
    if (fs::exists(p, ec)) return p.string();
  }
  return {};
}

std::optional<std::string> draw_plot(const std::string& path, const Report& r,
                                     const std::string& script) {
  if (!ends_with(path, ".svg") && !ends_with(path, ".png")) {
    return fmt::format("--plot {}: the file name must end in .svg or .png", path);
  }
  if (path.find_first_of("'\"\n") != std::string::npos) {
    return fmt::format("--plot {}: quotes and newlines are not allowed in the name", path);
  }
  if (script.empty()) {
    return "--plot: kbv-perf-plot.gp not found (set KBV_PERF_PLOT_SCRIPT to its path)";
  }
  if (r.lat.empty() && r.bw.empty()) return "--plot: no results to draw";
  char dir_template[] = "/tmp/kbv-perf-plot.XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    return fmt::format("--plot: mkdtemp: {}", std::strerror(errno));
  }
  const std::string dir = dir_template;
  const std::string samples = dir + "/samples.dat";
  const std::string rows = dir + "/rows.dat";
  std::string vars = fmt::format("out='{}'; samples='{}'; rows='{}'; ", path, samples, rows);
  std::optional<std::string> err;
  const std::string title =
      fmt::format("kbv {} {} {}", perftest_name(r.params.test), to_string(r.params.connection),
                  r.params.lat ? "latency" : "bandwidth");
  if (r.params.lat) {
    const LatRow& first = r.lat.front();
    std::vector<double> sorted = first.samples_us;
    if (sorted.size() < 2) err = "--plot: too few latency samples";
    std::sort(sorted.begin(), sorted.end());
    std::string text;
    for (double v : first.samples_us) text += fmt::format("{:.4f}\n", v);
    std::string table;
    for (const LatRow& row : r.lat) {
      table += fmt::format("{} {:.4f} {:.4f} {:.4f}\n", row.bytes, row.stats.t_typical_us,
                           row.stats.p99_us, row.stats.p999_us);
    }
    if (!err) err = write_file(samples, text);
    if (!err) err = write_file(rows, table);
    if (!err) {
      const double p50 = quantile(sorted, 0.5), p99 = quantile(sorted, 0.99);
      const double p999 = quantile(sorted, 0.999);
      const double lo = sorted.front();
      const double binw = std::max((p999 - lo) / 40.0, 0.001);
      vars += fmt::format(
          "mode='lat'; title='{}'; hbytes={}; n={}; p50={:.4f}; p99={:.4f}; p999={:.4f}; "
          "lo={:.4f}; binw={:.5f}; nsizes={}",
          title, first.bytes, sorted.size(), p50, p99, p999, lo, binw, r.lat.size());
    }
  } else {
    std::string table;
    for (const BwRow& row : r.bw) {
      table += fmt::format("{} {:.3f} {:.3f} {:.6f}\n", row.bytes, row.stats.bw_avg_mbs,
                           row.stats.bw_peak_mbs, row.stats.msg_rate_mpps);
    }
    err = write_file(rows, table);
    vars += fmt::format("mode='bw'; title='{}'; nsizes={}", title, r.bw.size());
  }
  if (!err) {
    std::error_code ec;
    fs::remove(path, ec);
    err = run({"gnuplot", "-e", vars, script});
    if (!err && (!fs::exists(path, ec) || fs::file_size(path, ec) == 0)) {
      err = fmt::format("gnuplot wrote no {}", path);
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return err;
}

}  // namespace kbv::perf
