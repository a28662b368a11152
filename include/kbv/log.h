/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kbv logging.
 *
 * By default kbv prints only errors, to stderr. The level comes from the
 * environment variable KBV_LOG_LEVEL, read on first use: one of
 * "error", "warn", "info", "debug", "trace" (or 0..4). An application can
 * redirect every message to its own handler.
 *
 * Threading: all functions may be called from any thread. The handler is
 * called from whichever thread logs (the caller's thread, an optional
 * progress thread, or a model thread) and must be thread-safe; it must not
 * call back into kbv. Changing the handler while other threads log is safe:
 * a message goes either to the old or to the new handler.
 */
#ifndef KBV_LOG_H
#define KBV_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kbv_log_level {
  KBV_LOG_ERROR = 0,
  KBV_LOG_WARN = 1,
  KBV_LOG_INFO = 2,
  KBV_LOG_DEBUG = 3,
  KBV_LOG_TRACE = 4, /* firmware command trace, per-packet model trace */
} kbv_log_level_t;

/* component: a short static string naming the source ("cmdq", "sim.fw", ...).
 * message: one line without trailing newline, valid only during the call. */
typedef void (*kbv_log_handler_t)(void* ctx, kbv_log_level_t level, const char* component,
                                  const char* message);

/* Install a handler; NULL restores the default (stderr). */
void kbv_log_set_handler(kbv_log_handler_t handler, void* ctx);
/* Messages above `level` are dropped before they are formatted. */
void kbv_log_set_level(kbv_log_level_t level);
kbv_log_level_t kbv_log_get_level(void);
/* Parse "error".."trace" or "0".."4"; returns 0 and sets *out, or -1. */
int kbv_log_parse_level(const char* text, kbv_log_level_t* out);
/* Name of a level ("error", ...). */
const char* kbv_log_level_name(kbv_log_level_t level);

#ifdef __cplusplus
}
#endif

#endif /* KBV_LOG_H */
