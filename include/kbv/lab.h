/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kbv/lab.h — device access for lab bring-up of ConnectX silicon (and of the
 * model): raw access registers, capability blocks, the health buffer, the
 * firmware command trace and function-level reset. tools/kbv-lab is built on
 * it. The rest of the API (kbv/kbv.h) applies: handles, event queues,
 * synchronous calls with KBV_EQ_NONE, statuses with the firmware status byte
 * and syndrome.
 *
 * Layouts: every buffer here is in the device's byte order and layout, as the
 * PRM and the kernel's include/linux/mlx5/mlx5_ifc.h define it (big-endian
 * dwords, bit 0 = MSB of byte 0); kbv's own tables of them are
 * src/hca/prm/reg.hpp (registers) and src/hca/prm/hca_cap.hpp (caps).
 *
 * Threading: as kbv.h (any thread; per-device state behind the device lock).
 */
#ifndef KBV_LAB_H
#define KBV_LAB_H

#include <kbv/kbv.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ===== access registers (ACCESS_REG 0x805) ================================ */

/* op of kbv_device_access_reg (mlx5_ifc.h MLX5_ACCESS_REGISTER_IN_OP_MOD_*) */
#define KBV_REG_WRITE 0u
#define KBV_REG_READ 1u

/* Register ids (kernel driver.h MLX5_REG_*): what the model answers.
 * The model refuses PPLM, PDDR and MCIA (and every other id) with firmware
 * status BAD_PARAM (KBV_ERR_FW_BAD_PARAM): it has no FEC, PHY diagnostics or
 * cable module to report; see src/sim/fw/objects/access_reg_cmds.cpp. */
#define KBV_REG_PMTU 0x5003u  /* pmtu_reg, 16 B: max/admin/oper MTU */
#define KBV_REG_PTYS 0x5004u  /* ptys_reg, 64 B: protocols, speed */
#define KBV_REG_PAOS 0x5006u  /* paos_reg, 16 B: admin/oper status */
#define KBV_REG_PPCNT 0x5008u /* ppcnt_reg, 256 B: port counters */
#define KBV_REG_PPLM 0x5023u  /* pplm_reg, 120 B: FEC */
#define KBV_REG_PDDR 0x5031u  /* pddr_reg, 256 B: port diagnostics */
#define KBV_REG_MCIA 0x9014u  /* cable module EEPROM */

/* Read or write one access register. data: len bytes (a multiple of 4, at
 * least the register's size) holding the register image; on success the
 * firmware's image (read and write both return the register's contents) is
 * copied back into data. argument: access_register_in.argument (0 for the
 * port registers). Event: info = register_id. Errors: KBV_ERR_INVALID_HANDLE,
 * KBV_ERR_INVALID_ARGUMENT (data NULL, len 0 / not a multiple of 4 / above
 * 4096, op not READ/WRITE), KBV_ERR_DEVICE_NOT_READY, device failure, and the
 * firmware's answer (e.g. KBV_ERR_FW_BAD_PARAM for a register it does not
 * implement, KBV_ERR_FW_BAD_INPUT_LENGTH when len is shorter than the
 * register). data must stay valid until the event. */
kbv_status_t kbv_device_access_reg(kbv_device_t dev, uint16_t register_id, uint32_t op,
                                   uint32_t argument, void* data, uint32_t len, kbv_eq_t eq,
                                   uint64_t user_data);

/* ===== capability blocks (QUERY_HCA_CAP 0x100) ============================ */

#define KBV_HCA_CAP_BYTES 4096u /* one capability block (mlx5_ifc.h hca_cap_union) */
#define KBV_CAP_MAX 0u          /* what the device supports */
#define KBV_CAP_CUR 1u          /* what is in effect (after kbv's SET_HCA_CAP) */
/* cap_type: device.h enum mlx5_cap_type (0 general = cmd_hca_cap, 3 atomic,
 * 4 RoCE = roce_cap, 0x20 general 2). */
#define KBV_CAP_GENERAL 0u
#define KBV_CAP_ROCE 4u

/* The capability block of cap_type (mode KBV_CAP_MAX / KBV_CAP_CUR) into out
 * (len >= KBV_HCA_CAP_BYTES; the first 4096 bytes are written). Event: info
 * = cap_type. Errors: KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (out
 * NULL, len too small, mode not MAX/CUR), KBV_ERR_DEVICE_NOT_READY, device
 * failure, firmware statuses (KBV_ERR_FW_BAD_PARAM: a type the device does
 * not have). */
kbv_status_t kbv_device_query_hca_cap(kbv_device_t dev, uint16_t cap_type, uint32_t mode, void* out,
                                      uint32_t len, kbv_eq_t eq, uint64_t user_data);

/* ===== health buffer (init segment 0x200..0x23F, 0x1010) ================= */

/* The health buffer decoded (device.h struct health_buffer, mlx5_ifc.h
 * health_buffer_bits; docs/PRM.md "Initialization segment"). All zero while
 * the firmware is healthy; after an assert: the assert variables, the
 * assert's return address (callra), the iRISC that asserted, the syndrome
 * (prm::HealthSyndrome: 0x1 FW error ... 0x10 high temperature). */
typedef struct kbv_health {
  uint32_t assert_var[5];
  uint32_t assert_exit_ptr;
  uint32_t assert_callra;
  uint32_t time; /* firmware's time of the assert */
  uint32_t fw_version;
  uint32_t hw_id;
  uint8_t rfr;      /* reset firmware required */
  uint8_t valid;    /* the buffer's contents are valid (newer firmware) */
  uint8_t severity; /* 3 bits (newer firmware) */
  uint8_t irisc_index;
  uint8_t synd;
  uint8_t reserved0;
  uint16_t ext_synd;
  uint32_t health_counter; /* 0x1010 low 24 bits: moves while firmware runs */
  uint32_t fw_rev;         /* init segment 0x000 (0xFFFFFFFF: device gone) */
  uint32_t nic_interface;  /* 0x014 bits 10:8 (7: disabled) */
  uint32_t reserved[4];
} kbv_health_t;

/* Reads the health registers now (no command; MMIO reads). Works on a device
 * that failed (that is when it matters) until it is closed. Errors:
 * KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (out NULL),
 * KBV_ERR_DEVICE_NOT_READY (the device was released). */
kbv_status_t kbv_device_read_health(kbv_device_t dev, kbv_health_t* out);

/* The health buffer as the open found it when the function's firmware had
 * already failed (a health syndrome left from before: a crash, an assert,
 * a fatal error the previous user saw). kbv resets such a function before
 * its bring-up — the open after a KBV_EVENT_DEVICE_FATAL is the recovery —
 * and keeps what it found here, since the reset clears the registers
 * (nic_interface is 0 here). Errors: KBV_ERR_INVALID_HANDLE,
 * KBV_ERR_INVALID_ARGUMENT (out NULL), KBV_ERR_NOT_FOUND (the open found a
 * healthy function), KBV_ERR_DEVICE_NOT_READY (released). */
kbv_status_t kbv_device_prior_health(kbv_device_t dev, kbv_health_t* out);

/* ===== firmware command trace ============================================ */

/* One firmware command as the driver completed it (every device of the
 * process, bring-up included). */
typedef struct kbv_cmd_record {
  uint16_t opcode; /* mlx5_ifc.h MLX5_CMD_OP_* */
  uint16_t op_mod;
  uint8_t delivery_status; /* command queue entry status (0: delivered) */
  uint8_t fw_status;       /* mbox_out.status (0: OK) */
  uint16_t reserved0;
  uint32_t syndrome;   /* mbox_out.syndrome */
  kbv_status_t status; /* kbv's view (KBV_SUCCESS, firmware, timeout, device failure) */
  uint32_t reserved1;
  uint64_t latency_ns; /* posted to completed */
} kbv_cmd_record_t;

typedef void (*kbv_cmd_observer_t)(const kbv_cmd_record_t* rec, void* ctx);

/* Installs (fn != NULL) or removes (fn NULL) the process-wide command
 * observer: fn(rec, ctx) runs for every command completion, on the thread
 * driving the device, with the device lock held — it must not call kbv.
 * Never fails (KBV_SUCCESS). */
kbv_status_t kbv_set_cmd_observer(kbv_cmd_observer_t fn, void* ctx);

/* ===== function-level reset ============================================== */

typedef struct kbv_reset_info {
  uint64_t flr_ns;     /* VFIO_DEVICE_RESET */
  uint64_t bringup_ns; /* the bring-up after it (0 when not brought up again) */
  uint32_t brought_up; /* 1: the device is usable again under the same handle */
  uint32_t reserved;
  /* Part of bringup_ns: how long the firmware kept the init segment's
   * `initializing` (0x1FC bit 31) set before the first command could go
   * (polled every 2 ms, bounded by the open's timeout, 120 s). */
  uint64_t init_wait_ns;
} kbv_reset_info_t;

/* Function-level reset through VFIO (VFIO_DEVICE_RESET; the model re-
 * initialises as silicon does: every firmware object and page forgotten,
 * `initializing` set for its init time, 1 s by default, KBV_SIM_INIT_MS).
 * Synchronous. The function loses its state, so the device is failed first
 * (unless it already was): requests in flight complete with
 * KBV_ERR_DEVICE_FATAL and KBV_EVENT_DEVICE_FATAL is posted on its event
 * queue. Then:
 *   - with no open children (PD, CQ, QP, SRQ, ...): the driver state is
 *     released (DMA pages and mappings) and the device is brought up again
 *     under the same handle (brought_up = 1), also after a device fatal:
 *     the reset is the recovery;
 *   - with children: the device stays failed (every later call on it or its
 *     children fails); close them and the device, then open it again
 *     (brought_up = 0).
 * info may be NULL. Errors: KBV_ERR_INVALID_HANDLE, KBV_ERR_NOT_SUPPORTED
 * (the function has no reset), KBV_ERR_IO, and the bring-up's failure (the
 * device is then failed as above). */
kbv_status_t kbv_device_reset(kbv_device_t dev, kbv_reset_info_t* info);

#ifdef __cplusplus
}
#endif

#endif /* KBV_LAB_H */
