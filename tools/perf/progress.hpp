// SPDX-License-Identifier: BSD-3-Clause
//
// A one-line progress bar for kbv-perf, drawn only when the output is a
// terminal (isatty); otherwise every call does nothing, so logs and pipes get
// only the tables. Redraws at most every 100 ms. One thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kbv::perf {

class Progress {
 public:
  // enabled: the caller's wish (--no-progress, --json turn it off); the bar is
  // drawn only if out is also a terminal.
  Progress(std::FILE* out, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool active() const { return active_; }
  // Starts a new bar for label with total steps.
  void start(std::string label, uint64_t total);
  void update(uint64_t done);
  // Erases the bar (before the table row is printed).
  void finish();

  // The bar's text for done/total in width columns: "label [#####.....]  42%".
  static std::string render(const std::string& label, uint64_t done, uint64_t total,
                            unsigned width);

 private:
  std::FILE* out_;
  bool active_;
  bool drawn_ = false;
  std::string label_;
  uint64_t total_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace kbv::perf
