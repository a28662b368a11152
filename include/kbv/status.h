/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kbv native status codes.
 *
 * Every kbv call returns a kbv_status_t; work completions carry one too, so a
 * single value space covers control-path results, firmware command failures
 * and data-path (CQE) errors.
 *
 *   0        KBV_SUCCESS
 *   > 0      informational, not a failure (KBV_PENDING: completes later as one
 *            event on the event queue the call named)
 *   < 0      an error; nothing further will complete for the call
 *
 * Values are part of the C ABI: never renumber, only append.
 *
 * Where a status was produced by the device, the firmware status byte and the
 * 32-bit syndrome travel beside it (kbv_event, kbv::Status); the mappings from
 * mlx5 command status, command delivery status and CQE syndrome are below.
 *
 * Threading: every function here is pure and may be called from any thread.
 */
#ifndef KBV_STATUS_H
#define KBV_STATUS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X-list of every status: name, value, message. Used to generate the enum and
 * the name/message tables so the three can never drift apart. */
#define KBV_STATUS_LIST(X)                                                                        \
  X(KBV_SUCCESS, 0, "success")                                                                    \
  X(KBV_PENDING, 1, "request accepted; it completes later as an event on its event queue")        \
  /* ---- argument and object errors ---- */                                                      \
  X(KBV_ERR_INVALID_ARGUMENT, -1, "invalid argument")                                             \
  X(KBV_ERR_INVALID_HANDLE, -2, "invalid or closed handle")                                       \
  X(KBV_ERR_INVALID_STATE, -3, "object is in the wrong state for this request")                   \
  X(KBV_ERR_INVALID_QP_STATE, -4, "QP state does not allow this transition or operation")         \
  X(KBV_ERR_INVALID_PORT, -5, "no such port")                                                     \
  X(KBV_ERR_INVALID_WR_TYPE, -6, "work request opcode not valid for this QP type")                \
  X(KBV_ERR_TOO_MANY_SGE, -7, "scatter/gather list longer than the queue allows")                 \
  X(KBV_ERR_INLINE_TOO_LARGE, -8, "inline data larger than the queue's max_inline_data")          \
  X(KBV_ERR_QUEUE_FULL, -9, "work queue has no room for the work requests")                       \
  X(KBV_ERR_BUFFER_TOO_SMALL, -10, "output buffer too small")                                     \
  X(KBV_ERR_NOT_FOUND, -11, "not found")                                                          \
  X(KBV_ERR_ALREADY_EXISTS, -12, "already exists")                                                \
  X(KBV_ERR_NOT_SUPPORTED, -13, "not supported by this device or build")                          \
  X(KBV_ERR_ACCESS_DENIED, -14, "access denied (permissions or memory access rights)")            \
  /* ---- resources ---- */                                                                       \
  X(KBV_ERR_NO_MEMORY, -20, "out of host memory")                                                 \
  X(KBV_ERR_NO_RESOURCES, -21, "device resources exhausted")                                      \
  X(KBV_ERR_LIMIT_EXCEEDED, -22, "request exceeds a device limit")                                \
  X(KBV_ERR_BUSY, -23, "resource busy")                                                           \
  /* ---- request lifecycle ---- */                                                               \
  X(KBV_ERR_CANCELLED, -30, "request cancelled")                                                  \
  X(KBV_ERR_TIMEOUT, -31, "operation timed out")                                                  \
  X(KBV_ERR_OVERFLOW, -32, "queue overflow; entries were lost")                                   \
  /* ---- device and platform ---- */                                                             \
  X(KBV_ERR_DEVICE_REMOVED, -40, "device removed or not responding")                              \
  X(KBV_ERR_DEVICE_FATAL, -41, "device reported a fatal error (health buffer)")                   \
  X(KBV_ERR_DEVICE_NOT_READY, -42, "device not ready (still initializing)")                       \
  X(KBV_ERR_IO, -43, "platform I/O error (VFIO, sysfs, mmap)")                                    \
  X(KBV_ERR_IOMMU_FAULT, -44, "DMA to an address not mapped in the IOMMU")                        \
  X(KBV_ERR_INTERNAL, -45, "internal error")                                                      \
  /* ---- firmware command interface (PRM 8.5 / mlx5_ifc.h) ---- */                               \
  X(KBV_ERR_CMD_DELIVERY, -50, "command delivery failed (command queue transport error)")         \
  X(KBV_ERR_FW_INTERNAL, -51, "firmware internal error")                                          \
  X(KBV_ERR_FW_BAD_OPCODE, -52, "firmware: unknown or unsupported opcode")                        \
  X(KBV_ERR_FW_BAD_PARAM, -53, "firmware: bad parameter")                                         \
  X(KBV_ERR_FW_BAD_SYS_STATE, -54, "firmware: bad system state")                                  \
  X(KBV_ERR_FW_BAD_RESOURCE, -55, "firmware: bad resource")                                       \
  X(KBV_ERR_FW_BAD_RESOURCE_STATE, -56, "firmware: resource in wrong state")                      \
  X(KBV_ERR_FW_BAD_INDEX, -57, "firmware: bad index")                                             \
  X(KBV_ERR_FW_BAD_PACKET, -58, "firmware: bad packet")                                           \
  X(KBV_ERR_FW_BAD_SIZE, -59, "firmware: bad size (more outstanding CQEs than the new CQ holds)") \
  X(KBV_ERR_FW_BAD_INPUT_LENGTH, -60, "firmware: bad command input length")                       \
  X(KBV_ERR_FW_BAD_OUTPUT_LENGTH, -61, "firmware: bad command output length")                     \
  X(KBV_ERR_FW_UNKNOWN, -62, "firmware: status not defined by the PRM")                           \
  /* ---- work completion errors (CQE syndromes, mlx5dv.h MLX5_CQE_SYNDROME_*) ---- */            \
  X(KBV_ERR_LOCAL_LENGTH, -70, "local length error")                                              \
  X(KBV_ERR_LOCAL_QP_OPERATION, -71, "local QP operation error")                                  \
  X(KBV_ERR_LOCAL_PROTECTION, -72, "local protection error (lkey, PD or bounds)")                 \
  X(KBV_ERR_WR_FLUSHED, -73, "work request flushed (QP in error)")                                \
  X(KBV_ERR_MW_BIND, -74, "memory window bind error")                                             \
  X(KBV_ERR_BAD_RESPONSE, -75, "bad response from the responder")                                 \
  X(KBV_ERR_LOCAL_ACCESS, -76, "local access error")                                              \
  X(KBV_ERR_REMOTE_INVALID_REQUEST, -77, "remote invalid request")                                \
  X(KBV_ERR_REMOTE_ACCESS, -78, "remote access error (rkey, bounds or rights)")                   \
  X(KBV_ERR_REMOTE_OPERATION, -79, "remote operational error")                                    \
  X(KBV_ERR_RETRY_EXCEEDED, -80, "transport retry counter exceeded")                              \
  X(KBV_ERR_RNR_RETRY_EXCEEDED, -81, "RNR retry counter exceeded")                                \
  X(KBV_ERR_REMOTE_ABORTED, -82, "remote aborted")                                                \
  X(KBV_ERR_WC_UNKNOWN, -83, "completion error with an unknown syndrome")

typedef enum kbv_status {
#define KBV_STATUS_ENUM_(name, value, msg) name = (value),
  KBV_STATUS_LIST(KBV_STATUS_ENUM_)
#undef KBV_STATUS_ENUM_
} kbv_status_t;

/* Name of the constant ("KBV_ERR_TIMEOUT"); "KBV_STATUS_UNKNOWN" for a value
 * not in the list. Never NULL; static storage. */
const char* kbv_status_name(kbv_status_t s);
/* One-line human message; never NULL; static storage. */
const char* kbv_status_message(kbv_status_t s);
/* Non-zero when s is one of the values above. */
int kbv_status_is_known(int32_t s);

static inline int kbv_status_is_error(kbv_status_t s) { return (int)s < 0; }

/* ---- mappings from device values ---------------------------------------- */

/* mlx5 command output status byte (mlx5_ifc.h / PRM "Command Return Status"
 * table; MLX5_CMD_STAT_*): 0x0 -> KBV_SUCCESS, 0x3 -> KBV_ERR_FW_BAD_PARAM,
 * 0xF -> KBV_ERR_NO_RESOURCES, ...; a value the PRM does not define maps to
 * KBV_ERR_FW_UNKNOWN. */
kbv_status_t kbv_status_from_cmd_status(uint8_t fw_status);

/* Command queue entry delivery status (status_own bits 7:1; docs/PRM.md "Command
 * queue entry"): 0 -> KBV_SUCCESS, anything else -> KBV_ERR_CMD_DELIVERY
 * (undefined values included). kbv_cmd_delivery_name() names the value. */
kbv_status_t kbv_status_from_cmd_delivery(uint8_t delivery_status);
const char* kbv_cmd_delivery_name(uint8_t delivery_status);

/* Error CQE syndrome (byte 55 of the 64-byte CQE; mlx5dv.h
 * MLX5_CQE_SYNDROME_*) -> the matching work completion error. */
kbv_status_t kbv_status_from_cqe_syndrome(uint8_t syndrome);

/* errno <-> status. kbv_status_from_errno(0) is KBV_SUCCESS; an errno with
 * no closer meaning maps to KBV_ERR_IO. kbv_status_to_errno returns a
 * positive errno (0 for success and pending-free informational statuses:
 * KBV_PENDING maps to EINPROGRESS). */
kbv_status_t kbv_status_from_errno(int err);
int kbv_status_to_errno(kbv_status_t s);

#ifdef __cplusplus
}
#endif

#endif /* KBV_STATUS_H */
