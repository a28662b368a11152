// SPDX-License-Identifier: BSD-3-Clause
#include "common/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>

namespace kbv::log {
namespace detail {

std::atomic<int> g_level{-1};

namespace {
std::shared_mutex g_handler_mu;
kbv_log_handler_t g_handler = nullptr;
void* g_handler_ctx = nullptr;
}  // namespace

int init_level() {
  kbv_log_level_t l = KBV_LOG_ERROR;
  if (const char* env = std::getenv("KBV_LOG_LEVEL"); env && *env) {
    if (kbv_log_parse_level(env, &l) != 0) {
      std::fprintf(stderr, "kbv: ignoring KBV_LOG_LEVEL=%s (want error|warn|info|debug|trace)\n",
                   env);
      l = KBV_LOG_ERROR;
    }
  }
  int expected = -1;
  g_level.compare_exchange_strong(expected, static_cast<int>(l), std::memory_order_relaxed);
  return g_level.load(std::memory_order_relaxed);
}

void emit(kbv_log_level_t level, const char* component, const std::string& msg) {
  std::shared_lock lock(g_handler_mu);
  if (g_handler) {
    g_handler(g_handler_ctx, level, component, msg.c_str());
    return;
  }
  std::fprintf(stderr, "kbv %s [%s] %s\n", kbv_log_level_name(level), component, msg.c_str());
}

}  // namespace detail

void reset_level_from_env() { detail::g_level.store(-1, std::memory_order_relaxed); }

}  // namespace kbv::log

extern "C" {

void kbv_log_set_handler(kbv_log_handler_t handler, void* ctx) {
  std::unique_lock lock(kbv::log::detail::g_handler_mu);
  kbv::log::detail::g_handler = handler;
  kbv::log::detail::g_handler_ctx = ctx;
}

void kbv_log_set_level(kbv_log_level_t level) {
  int l = static_cast<int>(level);
  if (l < KBV_LOG_ERROR) l = KBV_LOG_ERROR;
  if (l > KBV_LOG_TRACE) l = KBV_LOG_TRACE;
  kbv::log::detail::g_level.store(l, std::memory_order_relaxed);
}

kbv_log_level_t kbv_log_get_level(void) {
  int l = kbv::log::detail::g_level.load(std::memory_order_relaxed);
  if (l < 0) l = kbv::log::detail::init_level();
  return static_cast<kbv_log_level_t>(l);
}

int kbv_log_parse_level(const char* text, kbv_log_level_t* out) {
  static constexpr const char* kNames[] = {"error", "warn", "info", "debug", "trace"};
  if (!text || !out) return -1;
  for (int i = 0; i < 5; ++i) {
    if (strcasecmp(text, kNames[i]) == 0 || (text[0] == '0' + i && text[1] == '\0')) {
      *out = static_cast<kbv_log_level_t>(i);
      return 0;
    }
  }
  if (strcasecmp(text, "warning") == 0) {
    *out = KBV_LOG_WARN;
    return 0;
  }
  return -1;
}

const char* kbv_log_level_name(kbv_log_level_t level) {
  switch (level) {
    case KBV_LOG_ERROR: return "error";
    case KBV_LOG_WARN: return "warn";
    case KBV_LOG_INFO: return "info";
    case KBV_LOG_DEBUG: return "debug";
    case KBV_LOG_TRACE: return "trace";
  }
  return "?";
}

}  // extern "C"
