// SPDX-License-Identifier: BSD-3-Clause
// Internal logging front end: kbv::log::error("cmdq", "slot {} timed out", n).
// Formatting happens only when the level is enabled (one relaxed atomic load).
#pragma once

#include <kbv/log.h>

#include <fmt/format.h>

#include <atomic>
#include <utility>

namespace kbv::log {

namespace detail {
extern std::atomic<int> g_level;  // -1 until the environment was read
int init_level();
void emit(kbv_log_level_t level, const char* component, const std::string& msg);
}  // namespace detail

inline bool enabled(kbv_log_level_t level) {
  int l = detail::g_level.load(std::memory_order_relaxed);
  if (l < 0) l = detail::init_level();
  return static_cast<int>(level) <= l;
}

template <class... A>
void write(kbv_log_level_t level, const char* component, fmt::format_string<A...> f,
           A&&... a) noexcept {
  if (!enabled(level)) return;
  // Best effort: a message that cannot be formatted (no memory) is lost
  // rather than thrown into the caller's error path (a command completion
  // that logs its failure must still finish; found by verbs_oom).
  try {
    detail::emit(level, component, fmt::format(f, std::forward<A>(a)...));
  } catch (...) {
  }
}

template <class... A>
void error(const char* c, fmt::format_string<A...> f, A&&... a) {
  write(KBV_LOG_ERROR, c, f, std::forward<A>(a)...);
}
template <class... A>
void warn(const char* c, fmt::format_string<A...> f, A&&... a) {
  write(KBV_LOG_WARN, c, f, std::forward<A>(a)...);
}
template <class... A>
void info(const char* c, fmt::format_string<A...> f, A&&... a) {
  write(KBV_LOG_INFO, c, f, std::forward<A>(a)...);
}
template <class... A>
void debug(const char* c, fmt::format_string<A...> f, A&&... a) {
  write(KBV_LOG_DEBUG, c, f, std::forward<A>(a)...);
}
template <class... A>
void trace(const char* c, fmt::format_string<A...> f, A&&... a) {
  write(KBV_LOG_TRACE, c, f, std::forward<A>(a)...);
}

// Test hook: forget the level so the next use reads KBV_LOG_LEVEL again.
void reset_level_from_env();

}  // namespace kbv::log
