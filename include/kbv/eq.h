/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kbv event queues: the asynchronous control path (docs/DESIGN.md "The async
 * control path (event queues replace IRPs)").
 *
 * A control call names an event queue and a 64-bit user_data and returns
 * KBV_PENDING; exactly one kbv_event_t with that user_data later appears on
 * the queue. This plays the role of the IRP's completion (IoStatus.Status ->
 * status, IoStatus.Information -> object/info) in the OpenIB Windows kernel
 * verbs proposals (docs/NTSTATUS.md sources 000/001).
 *
 * Handles: kbv_eq_t is a generation-checked handle (never a pointer). A handle
 * that was destroyed, never created or is 0 yields KBV_ERR_INVALID_HANDLE from
 * every call here, never a crash, even when its slot was reused.
 *
 * Capacity: an event queue holds `depth` events. A request reserves room for
 * its completion when it is submitted (the submit fails with
 * KBV_ERR_QUEUE_FULL when the queue has none), so request completions are
 * never lost. Unsolicited events (port state, CQ error, QP errors, SRQ limit,
 * device fatal) that find the queue full are counted; the next kbv_eq_poll
 * after the queued events returns one KBV_EVENT_OVERFLOW event with status
 * KBV_ERR_OVERFLOW and info = how many were lost since the last report.
 *
 * Threading: producers (the driver, its optional progress thread) may post
 * from any thread. kbv_eq_poll has one consumer at a time per queue.
 * kbv_eq_cancel and kbv_eq_cancel_object may be called from any thread.
 * kbv_eq_destroy may race with other calls on the same handle: those either
 * finish on the still-alive queue or return KBV_ERR_INVALID_HANDLE.
 */
#ifndef KBV_EQ_H
#define KBV_EQ_H

#include <kbv/status.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Generation-checked event queue handle; 0 (KBV_EQ_NONE) is never valid and
 * means "no event queue: run the call synchronously" where a call allows it. */
typedef uint64_t kbv_eq_t;
#define KBV_EQ_NONE ((kbv_eq_t)0)

/* Largest depth kbv_eq_create accepts (events). */
#define KBV_EQ_MAX_DEPTH 65536u

typedef enum kbv_event_type {
  KBV_EVENT_NONE = 0,
  /* A control request (open, query, create/destroy/modify, close, ...)
   * completed: status is its result; object the object it created or acted
   * on; info a request-specific value. */
  KBV_EVENT_REQUEST = 1,
  /* Completion notification of an armed CQ (one per arm; IRP
   * "GetCqCompEvent"); object is the CQ. */
  KBV_EVENT_COMP_NOTIFY = 2,
  /* Async events (PRM "Event Queue" event types; mlx5_ifc.h / device.h
   * MLX5_EVENT_TYPE_*): object is the device/CQ/QP/SRQ; info carries the
   * port number for KBV_EVENT_PORT_STATE. */
  KBV_EVENT_PORT_STATE = 3,      /* MLX5_EVENT_TYPE_PORT_CHANGE */
  KBV_EVENT_CQ_ERROR = 4,        /* MLX5_EVENT_TYPE_CQ_ERROR */
  KBV_EVENT_QP_FATAL = 5,        /* MLX5_EVENT_TYPE_WQ_CATAS_ERROR */
  KBV_EVENT_QP_ACCESS_ERROR = 6, /* MLX5_EVENT_TYPE_WQ_ACCESS_ERROR */
  KBV_EVENT_SRQ_LIMIT = 7,       /* MLX5_EVENT_TYPE_SRQ_RQ_LIMIT */
  KBV_EVENT_DEVICE_FATAL = 8,    /* health buffer / MLX5_EVENT_TYPE_INTERNAL_ERROR */
  /* Unsolicited events were lost because the queue was full; status is
   * KBV_ERR_OVERFLOW, info the number lost since the previous report. */
  KBV_EVENT_OVERFLOW = 9,
} kbv_event_type_t;

/* One event. 40 bytes, naturally aligned; part of the C ABI. */
typedef struct kbv_event {
  uint32_t type;      /* kbv_event_type_t */
  int32_t status;     /* kbv_status_t: the request's result or the event's meaning */
  uint64_t user_data; /* the value the request was submitted with (0 for unsolicited) */
  uint64_t object;    /* object handle the event is about (0: none) */
  uint64_t info;      /* type-specific value (see kbv_event_type_t) */
  uint32_t syndrome;  /* firmware syndrome when the device produced status, else 0 */
  uint8_t fw_status;  /* firmware command status byte (mlx5_ifc.h mbox_out), else 0 */
  uint8_t reserved[3];
} kbv_event_t;

#ifdef __cplusplus
static_assert(sizeof(kbv_event_t) == 40, "kbv_event_t is ABI");
#else
_Static_assert(sizeof(kbv_event_t) == 40, "kbv_event_t is ABI");
#endif

/* Create an event queue holding up to `depth` events (1..KBV_EQ_MAX_DEPTH).
 * Errors: KBV_ERR_INVALID_ARGUMENT (out NULL, depth 0 or too large),
 * KBV_ERR_NO_MEMORY, KBV_ERR_NO_RESOURCES (handle table full), an errno
 * status when eventfd(2) fails. */
kbv_status_t kbv_eq_create(uint32_t depth, kbv_eq_t* out);

/* Destroy an event queue. Requests still in flight on it are cancelled on
 * the driver side and produce no event; events not yet polled are discarded;
 * its fd is closed. Errors: KBV_ERR_INVALID_HANDLE. */
kbv_status_t kbv_eq_destroy(kbv_eq_t eq);

/* Non-blocking: copy up to n waiting events into events[0..n) in the order
 * they were produced (an overflow report comes after the events queued
 * before it was seen). Polling also drives the device progress the queue was
 * attached to. Returns the number copied (0..n), or a negative kbv_status_t:
 * KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (events NULL with n > 0). */
int kbv_eq_poll(kbv_eq_t eq, kbv_event_t* events, uint32_t n);

/* An eventfd that is readable (POLLIN) while events (or an overflow report)
 * wait, and not readable once kbv_eq_poll has drained the queue. Do not read
 * or close it; it belongs to the queue and is closed by kbv_eq_destroy.
 * Errors: KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (fd NULL). */
kbv_status_t kbv_eq_get_fd(kbv_eq_t eq, int* fd);

/* Cancel the in-flight request submitted on eq with user_data.
 * KBV_SUCCESS: it completes (now) with one event with status
 * KBV_ERR_CANCELLED. KBV_ERR_INVALID_STATE: it already completed and its
 * event waits to be polled. KBV_ERR_NOT_FOUND: no such request (never
 * submitted, or its event was already polled). KBV_ERR_INVALID_HANDLE. */
kbv_status_t kbv_eq_cancel(kbv_eq_t eq, uint64_t user_data);

/* Cancel every in-flight request on eq about `object` (each gets one
 * KBV_ERR_CANCELLED event). *cancelled (may be NULL) receives the count.
 * KBV_SUCCESS when at least one was cancelled, KBV_ERR_NOT_FOUND when none,
 * KBV_ERR_INVALID_HANDLE. */
kbv_status_t kbv_eq_cancel_object(kbv_eq_t eq, uint64_t object, uint32_t* cancelled);

/* Total unsolicited events lost on eq since creation (reported or not).
 * Errors: KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (out NULL). */
kbv_status_t kbv_eq_get_lost(kbv_eq_t eq, uint64_t* out);

#ifdef __cplusplus
}
#endif

#endif /* KBV_EQ_H */
