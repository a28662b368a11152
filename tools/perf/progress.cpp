// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf progress bar (progress.hpp).
#include "perf/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace kbv::perf {

Progress::Progress(std::FILE* out, bool enabled)
    : out_(out), active_(enabled && out != nullptr && ::isatty(::fileno(out)) == 1) {}

Progress::~Progress() { finish(); }

std::string Progress::render(const std::string& label, uint64_t done, uint64_t total,
                             unsigned width) {
  const uint64_t d = std::min(done, total);
  const unsigned pct = total == 0 ? 100 : static_cast<unsigned>(d * 100 / total);
  const unsigned filled = total == 0 ? width : static_cast<unsigned>(d * width / total);
  return fmt::format("{} [{}{}] {:3}%", label, std::string(filled, '#'),
                     std::string(width - filled, '.'), pct);
}

void Progress::start(std::string label, uint64_t total) {
  label_ = std::move(label);
  total_ = total;
  last_ = {};
  update(0);
}

void Progress::update(uint64_t done) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  std::fputs(("\r" + render(label_, done, total_, 40)).c_str(), out_);
  std::fflush(out_);
  drawn_ = true;
}

void Progress::finish() {
  if (!active_ || !drawn_) return;
  std::fputs("\r\033[K", out_);  // carriage return, erase to end of line
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace kbv::perf
