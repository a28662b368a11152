// SPDX-License-Identifier: BSD-3-Clause
//
// Async events of kbv's libibverbs (ibv_get_async_event /
// ibv_ack_async_event) and the fds programs sleep on.
//
// Each context has one kbv event queue (ContextState::async_eq) named as the
// event_eq of its device and of every CQ, QP and SRQ it creates; kbv's async
// events (kbv.h "Asynchronous events") map to IBV_EVENT_*:
//   KBV_EVENT_PORT_STATE  -> IBV_EVENT_PORT_ACTIVE (new state ACTIVE) or
//                            IBV_EVENT_PORT_ERR (any other), element.port_num
//   KBV_EVENT_CQ_ERROR    -> IBV_EVENT_CQ_ERR, element.cq
//   KBV_EVENT_QP_FATAL    -> IBV_EVENT_QP_FATAL, element.qp
//   KBV_EVENT_QP_ACCESS_ERROR -> IBV_EVENT_QP_ACCESS_ERR, element.qp
//   KBV_EVENT_SRQ_LIMIT   -> IBV_EVENT_SRQ_LIMIT_REACHED, element.srq
//   KBV_EVENT_DEVICE_FATAL -> IBV_EVENT_DEVICE_FATAL
// An event about an object already destroyed, and kbv's overflow report,
// are dropped (the overflow is logged).
//
// context->async_fd (and a completion channel's fd) is an epoll instance
// watching the event queue's eventfd: poll/epoll on it says "an event
// waits", and a program that sets O_NONBLOCK on it (fcntl F_SETFL, as UCX
// does) gets EAGAIN from ibv_get_async_event / ibv_get_cq_event when
// nothing waits; otherwise those calls block. (kbv's eventfd itself is
// always non-blocking and must not be read, so it is not handed out.)
// Device progress: a blocking wait starts kbv's progress thread for the
// device (kbv_device_start_progress_thread), so events arrive while the
// program sleeps; kbv_eq_poll drives the device as well.
#pragma once

#include <infiniband/verbs.h>

#include <kbv/kbv.h>

#include <cstdint>

#include "ibverbs/context.hpp"

namespace kbv::ibverbs {

inline constexpr uint32_t kAsyncEqDepth = 1024;

// Creates ctx.state->async_epfd watching async_eq. 0 or an errno.
int async_setup(Context& ctx);
void async_teardown(Context& ctx);

// An epoll fd watching eq's eventfd (for async_fd and channel fds), or -errno.
int make_wait_fd(kbv_eq_t eq);
// Waits until epfd is readable; EAGAIN when the program set O_NONBLOCK on it.
// 0 or an errno.
int wait_readable(int epfd);
// Starts the progress thread of ctx's device once (see above).
void ensure_progress(Context& ctx);

// Fills the verbs_context slots (query_port, query_device_ex, create_qp_ex,
// ...) and the ibv_context ops kbv implements (ops.cpp).
void fill_verbs_ops(Context& ctx);

}  // namespace kbv::ibverbs
