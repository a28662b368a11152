// SPDX-License-Identifier: BSD-3-Clause
// Status names, messages and the mappings declared in kbv/status.h.
#include <kbv/status.h>
#include <kbv/status.hpp>

#include <fmt/format.h>
#include <infiniband/mlx5dv.h>

#include <cerrno>

namespace {

struct Entry {
  int32_t value;
  const char* name;
  const char* message;
};

constexpr Entry kEntries[] = {
#define KBV_STATUS_ENTRY_(name, value, msg) {value, #name, msg},
    KBV_STATUS_LIST(KBV_STATUS_ENTRY_)
#undef KBV_STATUS_ENTRY_
};

const Entry* find(int32_t v) {
  for (const auto& e : kEntries)
    if (e.value == v) return &e;
  return nullptr;
}

}  // namespace

extern "C" {

const char* kbv_status_name(kbv_status_t s) {
  const Entry* e = find(static_cast<int32_t>(s));
  return e ? e->name : "KBV_STATUS_UNKNOWN";
}

const char* kbv_status_message(kbv_status_t s) {
  const Entry* e = find(static_cast<int32_t>(s));
  return e ? e->message : "unknown status";
}

int kbv_status_is_known(int32_t s) { return find(s) != nullptr; }

// mlx5 command return status. Values: PRM "Command Return Status" table, as
// used by the kernel's drivers/net/ethernet/mellanox/mlx5/core/cmd.c
// (MLX5_CMD_STAT_*); see also docs/PRM.md "Command status".
kbv_status_t kbv_status_from_cmd_status(uint8_t fw_status) {
  switch (fw_status) {
    case 0x00: return KBV_SUCCESS;
    case 0x01: return KBV_ERR_FW_INTERNAL;            // internal error
    case 0x02: return KBV_ERR_FW_BAD_OPCODE;          // bad operation
    case 0x03: return KBV_ERR_FW_BAD_PARAM;           // bad parameter
    case 0x04: return KBV_ERR_FW_BAD_SYS_STATE;       // bad system state
    case 0x05: return KBV_ERR_FW_BAD_RESOURCE;        // bad resource
    case 0x06: return KBV_ERR_BUSY;                   // resource busy
    case 0x08: return KBV_ERR_LIMIT_EXCEEDED;         // exceeds limits
    case 0x09: return KBV_ERR_FW_BAD_RESOURCE_STATE;  // bad resource state
    case 0x0A: return KBV_ERR_FW_BAD_INDEX;           // bad index
    case 0x0F: return KBV_ERR_NO_RESOURCES;           // no resources
    case 0x10: return KBV_ERR_INVALID_QP_STATE;       // bad QP state
    case 0x30: return KBV_ERR_FW_BAD_PACKET;          // bad packet
    case 0x40: return KBV_ERR_FW_BAD_SIZE;            // bad size: too many outstanding CQEs
    case 0x50: return KBV_ERR_FW_BAD_INPUT_LENGTH;    // bad input length
    case 0x51: return KBV_ERR_FW_BAD_OUTPUT_LENGTH;   // bad output length
    default: return KBV_ERR_FW_UNKNOWN;
  }
}

// Delivery status, status_own bits 7:1 of the command queue entry
// (kernel include/linux/mlx5/device.h MLX5_CMD_DELIVERY_STAT_*).
const char* kbv_cmd_delivery_name(uint8_t d) {
  switch (d) {
    case 0x00: return "ok";
    case 0x01: return "bad signature";
    case 0x02: return "bad token";
    case 0x03: return "bad block number";
    case 0x04: return "output pointer not aligned";
    case 0x05: return "input pointer not aligned";
    case 0x06: return "firmware internal error";
    case 0x07: return "bad input length";
    case 0x08: return "bad output length";
    case 0x09: return "reserved field not zero";
    case 0x10: return "bad command type";
    default: return "undefined delivery status";
  }
}

kbv_status_t kbv_status_from_cmd_delivery(uint8_t d) {
  return d == 0 ? KBV_SUCCESS : KBV_ERR_CMD_DELIVERY;
}

// Error CQE syndrome, byte 55 of the CQE (mlx5dv.h MLX5_CQE_SYNDROME_*).
kbv_status_t kbv_status_from_cqe_syndrome(uint8_t syndrome) {
  switch (syndrome) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: return KBV_ERR_LOCAL_LENGTH;
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR: return KBV_ERR_LOCAL_QP_OPERATION;
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR: return KBV_ERR_LOCAL_PROTECTION;
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR: return KBV_ERR_WR_FLUSHED;
    case MLX5_CQE_SYNDROME_MW_BIND_ERR: return KBV_ERR_MW_BIND;
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR: return KBV_ERR_BAD_RESPONSE;
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR: return KBV_ERR_LOCAL_ACCESS;
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: return KBV_ERR_REMOTE_INVALID_REQUEST;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: return KBV_ERR_REMOTE_ACCESS;
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR: return KBV_ERR_REMOTE_OPERATION;
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return KBV_ERR_RETRY_EXCEEDED;
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR: return KBV_ERR_RNR_RETRY_EXCEEDED;
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR: return KBV_ERR_REMOTE_ABORTED;
    default: return KBV_ERR_WC_UNKNOWN;
  }
}

kbv_status_t kbv_status_from_errno(int err) {
  if (err < 0) err = -err;
  switch (err) {
    case 0: return KBV_SUCCESS;
    case EINPROGRESS: return KBV_PENDING;
    case EINVAL: return KBV_ERR_INVALID_ARGUMENT;
    case EBADF: return KBV_ERR_INVALID_HANDLE;
    case ENOMEM: return KBV_ERR_NO_MEMORY;
    case ENOSPC: return KBV_ERR_NO_RESOURCES;
    case EAGAIN: return KBV_ERR_NO_RESOURCES;
    case E2BIG: return KBV_ERR_LIMIT_EXCEEDED;
    case EBUSY: return KBV_ERR_BUSY;
    case EOPNOTSUPP: return KBV_ERR_NOT_SUPPORTED;
    case ENOSYS: return KBV_ERR_NOT_SUPPORTED;
    case ENOTTY: return KBV_ERR_NOT_SUPPORTED;
    case ENOENT: return KBV_ERR_NOT_FOUND;
    case EEXIST: return KBV_ERR_ALREADY_EXISTS;
    case EACCES: return KBV_ERR_ACCESS_DENIED;
    case EPERM: return KBV_ERR_ACCESS_DENIED;
    case ECANCELED: return KBV_ERR_CANCELLED;
    case ETIMEDOUT: return KBV_ERR_TIMEOUT;
    case EOVERFLOW: return KBV_ERR_OVERFLOW;
    case ENODEV: return KBV_ERR_DEVICE_REMOVED;
    case ENXIO: return KBV_ERR_DEVICE_REMOVED;
    case EFAULT: return KBV_ERR_IOMMU_FAULT;
    case ERANGE: return KBV_ERR_BUFFER_TOO_SMALL;
    case EPROTO: return KBV_ERR_CMD_DELIVERY;
    default: return KBV_ERR_IO;
  }
}

int kbv_status_to_errno(kbv_status_t s) {
  switch (s) {
    case KBV_SUCCESS: return 0;
    case KBV_PENDING: return EINPROGRESS;
    case KBV_ERR_INVALID_ARGUMENT:
    case KBV_ERR_INVALID_WR_TYPE:
    case KBV_ERR_TOO_MANY_SGE:
    case KBV_ERR_INLINE_TOO_LARGE:
    case KBV_ERR_INVALID_PORT:
    case KBV_ERR_FW_BAD_PARAM:
    case KBV_ERR_FW_BAD_RESOURCE:
    case KBV_ERR_FW_BAD_INDEX:
    case KBV_ERR_FW_BAD_PACKET:
    case KBV_ERR_FW_BAD_SIZE: return EINVAL;
    case KBV_ERR_INVALID_STATE:
    case KBV_ERR_INVALID_QP_STATE:
    case KBV_ERR_FW_BAD_RESOURCE_STATE:
    case KBV_ERR_FW_BAD_SYS_STATE: return EINVAL;
    case KBV_ERR_INVALID_HANDLE: return EBADF;
    case KBV_ERR_QUEUE_FULL: return ENOMEM;  // what ibv_post_send reports for a full SQ
    case KBV_ERR_BUFFER_TOO_SMALL: return ERANGE;
    case KBV_ERR_NOT_FOUND: return ENOENT;
    case KBV_ERR_ALREADY_EXISTS: return EEXIST;
    case KBV_ERR_NOT_SUPPORTED:
    case KBV_ERR_FW_BAD_OPCODE: return EOPNOTSUPP;
    case KBV_ERR_ACCESS_DENIED: return EACCES;
    case KBV_ERR_NO_MEMORY: return ENOMEM;
    case KBV_ERR_NO_RESOURCES: return ENOSPC;
    case KBV_ERR_LIMIT_EXCEEDED: return E2BIG;
    case KBV_ERR_BUSY: return EBUSY;
    case KBV_ERR_CANCELLED: return ECANCELED;
    case KBV_ERR_TIMEOUT: return ETIMEDOUT;
    case KBV_ERR_OVERFLOW: return EOVERFLOW;
    case KBV_ERR_DEVICE_REMOVED: return ENODEV;
    case KBV_ERR_DEVICE_FATAL: return EIO;
    case KBV_ERR_DEVICE_NOT_READY: return EAGAIN;
    case KBV_ERR_IOMMU_FAULT: return EFAULT;
    case KBV_ERR_CMD_DELIVERY: return EPROTO;
    default: return EIO;  // remaining device, firmware and completion errors
  }
}

}  // extern "C"

std::string kbv::Status::to_string() const {
  std::string s = fmt::format("{} ({})", name(), message());
  if (fw_status_ != 0 || syndrome_ != 0)
    s += fmt::format(" [fw status {:#x} syndrome {:#x}]", fw_status_, syndrome_);
  return s;
}
