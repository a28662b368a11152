/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NTSTATUS compatibility: kbv_status_t <-> NTSTATUS, for code written against
 * the Windows kernel-verbs proposals kbv comes from (docs/NTSTATUS.md source 000: the
 * "[RFC v2] Kernel Async Verbs" IB_VERBS_INTERFACE_STANDARD; docs/NTSTATUS.md).
 *
 * Every native status has exactly one NTSTATUS (kbv_status_to_ntstatus), and
 * that mapping is one-to-one, so kbv_status_from_ntstatus() gives the native
 * status back for every value. Where Windows has a fitting system code it is
 * used (KBV_ERR_CANCELLED -> STATUS_CANCELLED, KBV_ERR_TIMEOUT ->
 * STATUS_IO_TIMEOUT, never the success code STATUS_TIMEOUT). IB-specific cases
 * use the RFC's customer codes in facility 0x3B (FACILITY_INFINIBAND):
 * STATUS_IB_INSUFFICIENT_WR .. STATUS_IB_INVALID_PORT; the remaining
 * kbv-specific cases (firmware statuses, completion errors) use kbv customer
 * codes in the same facility from code 0x1000 up. Windows translates only
 * system codes into Win32 errors, so every customer code has a system-code
 * fallback: kbv_ntstatus_to_system().
 *
 * Threading: pure functions; any thread.
 */
#ifndef KBV_COMPAT_NTSTATUS_H
#define KBV_COMPAT_NTSTATUS_H

#include <kbv/status.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t KBV_NTSTATUS;

/* Values: docs/NTSTATUS.md (Windows ntstatus.h). */
#define KBV_STATUS_SUCCESS ((KBV_NTSTATUS)0x00000000)
#define KBV_STATUS_ABANDONED ((KBV_NTSTATUS)0x00000080)
#define KBV_STATUS_TIMEOUT ((KBV_NTSTATUS)0x00000102)
#define KBV_STATUS_PENDING ((KBV_NTSTATUS)0x00000103)
#define KBV_STATUS_EVENT_DONE ((KBV_NTSTATUS)0x40000012)
#define KBV_STATUS_BUFFER_OVERFLOW ((KBV_NTSTATUS)0x80000005)
#define KBV_STATUS_DEVICE_BUSY ((KBV_NTSTATUS)0x80000011)
#define KBV_STATUS_NO_MORE_ENTRIES ((KBV_NTSTATUS)0x8000001A)
#define KBV_STATUS_UNSUCCESSFUL ((KBV_NTSTATUS)0xC0000001)
#define KBV_STATUS_ACCESS_VIOLATION ((KBV_NTSTATUS)0xC0000005)
#define KBV_STATUS_INVALID_HANDLE ((KBV_NTSTATUS)0xC0000008)
#define KBV_STATUS_INVALID_PARAMETER ((KBV_NTSTATUS)0xC000000D)
#define KBV_STATUS_INVALID_DEVICE_REQUEST ((KBV_NTSTATUS)0xC0000010)
#define KBV_STATUS_NO_MEMORY ((KBV_NTSTATUS)0xC0000017)
#define KBV_STATUS_ACCESS_DENIED ((KBV_NTSTATUS)0xC0000022)
#define KBV_STATUS_BUFFER_TOO_SMALL ((KBV_NTSTATUS)0xC0000023)
#define KBV_STATUS_INVALID_PARAMETER_MIX ((KBV_NTSTATUS)0xC0000030)
#define KBV_STATUS_OBJECT_NAME_COLLISION ((KBV_NTSTATUS)0xC0000035)
#define KBV_STATUS_DATA_OVERRUN ((KBV_NTSTATUS)0xC000003C)
#define KBV_STATUS_FILE_LOCK_CONFLICT ((KBV_NTSTATUS)0xC0000054)
#define KBV_STATUS_INSUFFICIENT_RESOURCES ((KBV_NTSTATUS)0xC000009A)
#define KBV_STATUS_DEVICE_NOT_READY ((KBV_NTSTATUS)0xC00000A3)
#define KBV_STATUS_IO_TIMEOUT ((KBV_NTSTATUS)0xC00000B5)
#define KBV_STATUS_FILE_FORCED_CLOSED ((KBV_NTSTATUS)0xC00000B6)
#define KBV_STATUS_NOT_SUPPORTED ((KBV_NTSTATUS)0xC00000BB)
#define KBV_STATUS_INTERNAL_ERROR ((KBV_NTSTATUS)0xC00000E5)
#define KBV_STATUS_INVALID_PARAMETER_1 ((KBV_NTSTATUS)0xC00000EF)
#define KBV_STATUS_INVALID_PARAMETER_12 ((KBV_NTSTATUS)0xC00000FA)
#define KBV_STATUS_CANCELLED ((KBV_NTSTATUS)0xC0000120)
#define KBV_STATUS_REMOTE_RESOURCES ((KBV_NTSTATUS)0xC000013D)
#define KBV_STATUS_INVALID_ADDRESS ((KBV_NTSTATUS)0xC0000141)
#define KBV_STATUS_INVALID_DEVICE_STATE ((KBV_NTSTATUS)0xC0000184)
#define KBV_STATUS_CONNECTION_RESET ((KBV_NTSTATUS)0xC000020D)
#define KBV_STATUS_NOT_FOUND ((KBV_NTSTATUS)0xC0000225)
#define KBV_STATUS_CONNECTION_REFUSED ((KBV_NTSTATUS)0xC0000236)
#define KBV_STATUS_CONNECTION_INVALID ((KBV_NTSTATUS)0xC000023A)
#define KBV_STATUS_HOST_UNREACHABLE ((KBV_NTSTATUS)0xC000023D)
#define KBV_STATUS_CONNECTION_ABORTED ((KBV_NTSTATUS)0xC0000241)
#define KBV_STATUS_DEVICE_REMOVED ((KBV_NTSTATUS)0xC00002B6)

/* The RFC's customer codes (seed 000, inc/iba/ib_status.h: severity error,
 * customer bit, FACILITY_INFINIBAND 0x3B). */
#define KBV_FACILITY_INFINIBAND 0x3B
#define KBV_STATUS_IB_INSUFFICIENT_WR ((KBV_NTSTATUS)0xE03B0001)
#define KBV_STATUS_IB_INSUFFICIENT_SGE ((KBV_NTSTATUS)0xE03B0002)
#define KBV_STATUS_IB_INVALID_WR_TYPE ((KBV_NTSTATUS)0xE03B0003)
#define KBV_STATUS_IB_INVALID_STATE ((KBV_NTSTATUS)0xE03B0004)
#define KBV_STATUS_IB_INVALID_PORT ((KBV_NTSTATUS)0xE03B0005)
/* kbv's own customer codes: 0xE03B1000 + n (see ntstatus.cpp's table). */
#define KBV_STATUS_KBV_CODE_BASE 0x1000

/* ---- severity helpers (bits 31-30 severity, 29 customer, 27-16 facility) */
static inline int kbv_nt_success(KBV_NTSTATUS s) { return s >= 0; }
static inline int kbv_nt_information(KBV_NTSTATUS s) { return ((uint32_t)s >> 30) == 1; }
static inline int kbv_nt_warning(KBV_NTSTATUS s) { return ((uint32_t)s >> 30) == 2; }
static inline int kbv_nt_error(KBV_NTSTATUS s) { return ((uint32_t)s >> 30) == 3; }
static inline int kbv_nt_customer(KBV_NTSTATUS s) { return ((uint32_t)s >> 29) & 1; }
static inline uint32_t kbv_nt_facility(KBV_NTSTATUS s) { return ((uint32_t)s >> 16) & 0xFFF; }
static inline uint32_t kbv_nt_code(KBV_NTSTATUS s) { return (uint32_t)s & 0xFFFF; }
/* HRESULT_FROM_NT: sets the FACILITY_NT_BIT (bit 28). */
static inline int32_t kbv_hresult_from_nt(KBV_NTSTATUS s) {
  return (int32_t)((uint32_t)s | 0x10000000u);
}

#ifndef NT_SUCCESS
#define NT_SUCCESS(s) kbv_nt_success((KBV_NTSTATUS)(s))
#endif
#ifndef NT_INFORMATION
#define NT_INFORMATION(s) kbv_nt_information((KBV_NTSTATUS)(s))
#endif
#ifndef NT_WARNING
#define NT_WARNING(s) kbv_nt_warning((KBV_NTSTATUS)(s))
#endif
#ifndef NT_ERROR
#define NT_ERROR(s) kbv_nt_error((KBV_NTSTATUS)(s))
#endif
#ifndef HRESULT_FROM_NT
#define HRESULT_FROM_NT(s) kbv_hresult_from_nt((KBV_NTSTATUS)(s))
#endif

/* STATUS_INVALID_PARAMETER_n for argument n, counted from 1 (1..12); any
 * other n gives STATUS_INVALID_PARAMETER. */
KBV_NTSTATUS kbv_nt_invalid_parameter_n(unsigned n);

/* ---- native <-> NTSTATUS ----------------------------------------------- */

/* The NTSTATUS for a native status; one-to-one over every kbv_status_t.
 * A value outside kbv_status_t gives STATUS_INTERNAL_ERROR. */
KBV_NTSTATUS kbv_status_to_ntstatus(kbv_status_t s);

/* The native status for an NTSTATUS: exact for every value
 * kbv_status_to_ntstatus() produces; other system codes map to their closest
 * native meaning (STATUS_INVALID_PARAMETER_n -> KBV_ERR_INVALID_ARGUMENT,
 * STATUS_TIMEOUT -> KBV_ERR_TIMEOUT, ...); an unknown code maps by severity
 * (success -> KBV_SUCCESS, anything else -> KBV_ERR_IO). */
kbv_status_t kbv_status_from_ntstatus(KBV_NTSTATUS nt);

/* The system-code fallback of a customer code (the RFC's STATUS_IB_* and
 * kbv's own); a system code is returned unchanged. */
KBV_NTSTATUS kbv_ntstatus_to_system(KBV_NTSTATUS nt);

/* Symbolic name ("STATUS_IO_TIMEOUT", "STATUS_IB_INSUFFICIENT_WR",
 * "STATUS_KBV_FW_BAD_PARAM"); "STATUS_UNKNOWN" when not one of the above. */
const char* kbv_ntstatus_name(KBV_NTSTATUS nt);

/* ---- OpenIB access layer ib_api_status_t, by name ----------------------
 * The enum's ordinals differ between OpenIB versions, so the mapping is by
 * name ("IB_INSUFFICIENT_MEMORY"); docs/NTSTATUS.md gives the table. */

/* The NTSTATUS the OpenIB access layer used for an ib_api_status_t name;
 * returns 0 and sets *out, or -1 for a name that is not an ib_api_status_t. */
int kbv_ntstatus_from_ib_api_status(const char* name, KBV_NTSTATUS* out);
/* The ib_api_status_t name for a native status ("IB_INVALID_QP_STATE");
 * never NULL ("IB_ERROR" when nothing closer exists). */
const char* kbv_status_to_ib_api_status(kbv_status_t s);

#ifdef __cplusplus
}
#endif

#endif /* KBV_COMPAT_NTSTATUS_H */
