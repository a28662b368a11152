// SPDX-License-Identifier: BSD-3-Clause
//
// Event queue entries: the 64-byte EQE, the event data layouts of the events
// the driver and the model use, the event type values and the port-change
// sub types.
//
// Sources:
//   * kernel include/linux/mlx5/device.h: struct mlx5_eqe (type @1,
//     sub_type @3, data @32, signature @62, owner @63), the event data structs
//     mlx5_eqe_comp / _cmd / _page_req / _port_state / _cq_err / _qp_srq,
//     enum mlx5_event (MLX5_EVENT_TYPE_*), MLX5_PORT_CHANGE_SUBTYPE_*,
//     MLX5_EVENT_QUEUE_TYPE_*;
//   * kernel include/linux/mlx5/mlx5_ifc.h: struct mlx5_ifc_eqe_bits and the
//     members of union mlx5_ifc_event_auto_bits (comp_event, cmd_inter_comp_event,
//     pages_req_event, port_state_change_event, cq_error, qp_events), which
//     give the same offsets in bits;
//   * docs/PRM.md "Event queues": every byte offset it states
//     (completion CQN = low 24 bits of data+24, CQ error CQN @data+0 and
//     syndrome @data+11, QP/SRQ type @data+20 and number @data+24, page
//     request function id @data+2 and count @data+4, port @data+8 upper nibble)
//     agrees with device.h and mlx5_ifc.h and is pinned by a static_assert.
//
// Event data tables are relative to the start of eqe::data (EQE byte 32); use
// Ref<eqe>::at(eqe::comp) etc. to view them.
//
// Threading: layouts and constants only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// Event data sizes: 28 bytes (mlx5_ifc.h union event_auto_bits, 0xe0 bits).
inline constexpr uint32_t kEqeDataBits = 0xe0;

// Completion event (type 0x00). device.h mlx5_eqe_comp; mlx5_ifc.h comp_event_bits.
struct eqe_comp {
  static constexpr uint32_t kBits = kEqeDataBits;
  static constexpr Field<eqe_comp> cqn{0xc8, 24};  // mlx5_ifc.h cq_number
};
static_assert(eqe_comp::kBits / 8 == 28);
static_assert(eqe_comp::cqn.off / 32 * 4 == 24);  // low 24 bits of data+24

// Command completion event (type 0x0a). device.h mlx5_eqe_cmd;
// mlx5_ifc.h cmd_inter_comp_event_bits.
struct eqe_cmd {
  static constexpr uint32_t kBits = kEqeDataBits;
  static constexpr Field<eqe_cmd> vector{0x0, 32};  // bit n set: slot n completed
};
static_assert(eqe_cmd::kBits / 8 == 28);
static_assert(eqe_cmd::vector.off == 0);

// Page request event (type 0x0b). device.h mlx5_eqe_page_req;
// mlx5_ifc.h pages_req_event_bits.
struct eqe_page_req {
  static constexpr uint32_t kBits = kEqeDataBits;
  static constexpr Field<eqe_page_req> ec_function{0x0, 16};  // embedded CPU function
  static constexpr Field<eqe_page_req> function_id{0x10, 16};
  // Signed 32-bit count: > 0 firmware wants pages, < 0 it returns them.
  static constexpr Field<eqe_page_req> num_pages{0x20, 32};
};
static_assert(eqe_page_req::kBits / 8 == 28);
static_assert(eqe_page_req::function_id.off / 8 == 2);
static_assert(eqe_page_req::num_pages.off / 8 == 4);

// Port state change event (type 0x09). device.h mlx5_eqe_port_state (the port
// is the upper nibble of data+8); mlx5_ifc.h port_state_change_event_bits.
struct eqe_port_state {
  static constexpr uint32_t kBits = kEqeDataBits;
  static constexpr Field<eqe_port_state> port_num{0x40, 4};  // 1-based port
};
static_assert(eqe_port_state::kBits / 8 == 28);
static_assert(eqe_port_state::port_num.off / 8 == 8 && eqe_port_state::port_num.off % 8 == 0);

// CQ error event (type 0x04). device.h mlx5_eqe_cq_err; mlx5_ifc.h cq_error_bits.
struct eqe_cq_err {
  static constexpr uint32_t kBits = kEqeDataBits;
  static constexpr Field<eqe_cq_err> cqn{0x8, 24};
  static constexpr Field<eqe_cq_err> syndrome{0x58, 8};  // CqErrSyndrome
};
static_assert(eqe_cq_err::kBits / 8 == 28);
static_assert(eqe_cq_err::cqn.end() == 32);  // low 24 bits of data+0
static_assert(eqe_cq_err::syndrome.off / 8 == 11);

// QP / SRQ events (types 0x01-0x03, 0x05, 0x07, 0x10-0x14). device.h
// mlx5_eqe_qp_srq (type, qp_srq_n); mlx5_ifc.h qp_events_bits (type, qpn_rqn_sqn).
struct eqe_qp_srq {
  static constexpr uint32_t kBits = kEqeDataBits;
  static constexpr Field<eqe_qp_srq> type{0xa0, 8};       // EventQueueType
  static constexpr Field<eqe_qp_srq> qp_srq_n{0xc8, 24};  // QPN or SRQN
};
static_assert(eqe_qp_srq::kBits / 8 == 28);
static_assert(eqe_qp_srq::type.off / 8 == 20);
static_assert(eqe_qp_srq::qp_srq_n.off / 32 * 4 == 24);

// device.h struct mlx5_eqe; mlx5_ifc.h eqe_bits (64 B).
struct eqe {
  static constexpr uint32_t kBits = 0x200;
  using F = Field<eqe>;
  static constexpr F type{0x8, 8};                        // EventType (mlx5_ifc.h event_type)
  static constexpr F sub_type{0x18, 8};                   // e.g. PortChangeSubtype (event_sub_type)
  static constexpr Bytes<eqe> data{0x100, kEqeDataBits};  // 28 B of event data
  static constexpr F signature{0x1f0, 8};
  static constexpr F owner{0x1ff, 1};  // bit 0 of byte 63
  // The event data, by event.
  static constexpr Sub<eqe, eqe_comp> comp{0x100};
  static constexpr Sub<eqe, eqe_cmd> cmd{0x100};
  static constexpr Sub<eqe, eqe_page_req> req_pages{0x100};
  static constexpr Sub<eqe, eqe_port_state> port{0x100};
  static constexpr Sub<eqe, eqe_cq_err> cq_err{0x100};
  static constexpr Sub<eqe, eqe_qp_srq> qp_srq{0x100};
};
static_assert(eqe::kBits / 8 == 64);
static_assert(eqe::type.off / 8 == 1);
static_assert(eqe::sub_type.off / 8 == 3);
static_assert(eqe::data.byte_off() == 32 && eqe::data.size() == 28);
static_assert(eqe::signature.off / 8 == 62);
static_assert(eqe::owner.off / 8 == 63);
static_assert(eqe::comp.end() == eqe::data.end());

inline constexpr uint32_t kEqeBytes = eqe::kBits / 8;
// Value software writes to every EQE owner byte of a new EQ (docs/PRM.md: "software
// initialises every owner byte to 1").
inline constexpr uint8_t kEqeOwnerInit = 0x1;

// Event types (device.h enum mlx5_event; docs/PRM.md "Types"). Bit n of
// create_eq_in.event_bitmask enables type n.
enum class EventType : uint8_t {
  COMP = 0x00,
  PATH_MIG = 0x01,
  COMM_EST = 0x02,
  SQ_DRAINED = 0x03,
  CQ_ERROR = 0x04,
  WQ_CATAS_ERROR = 0x05,
  PATH_MIG_FAILED = 0x07,
  INTERNAL_ERROR = 0x08,
  PORT_CHANGE = 0x09,
  CMD = 0x0a,
  PAGE_REQUEST = 0x0b,
  PAGE_FAULT = 0x0c,
  NIC_VPORT_CHANGE = 0x0d,
  WQ_INVAL_REQ_ERROR = 0x10,
  WQ_ACCESS_ERROR = 0x11,
  SRQ_CATAS_ERROR = 0x12,
  SRQ_LAST_WQE = 0x13,
  SRQ_RQ_LIMIT = 0x14,
  GPIO_EVENT = 0x15,
  PORT_MODULE_EVENT = 0x16,
  TEMP_WARN_EVENT = 0x17,
  GENERAL_EVENT = 0x22,
};

constexpr uint8_t to_u8(EventType t) { return static_cast<uint8_t>(t); }
// The 256-bit event bitmask is four u64 words (create_eq_in.event_bitmask[4]);
// type t is bit t % 64 of word t / 64.
constexpr uint32_t event_word(EventType t) { return to_u8(t) / 64; }
constexpr uint64_t event_bit(EventType t) { return 1ull << (to_u8(t) % 64); }

// Port change sub types (eqe.sub_type of PORT_CHANGE; device.h
// MLX5_PORT_CHANGE_SUBTYPE_*).
enum class PortChangeSubtype : uint8_t {
  DOWN = 1,
  ACTIVE = 4,
  INITIALIZED = 5,
  LID = 6,
  PKEY = 7,
  GUID = 8,
  CLIENT_REREG = 9,
};

// eqe_qp_srq.type: the kind of queue named by qp_srq_n (device.h
// MLX5_EVENT_QUEUE_TYPE_*). SRQ events (0x12-0x14) name an SRQ.
enum class EventQueueType : uint8_t {
  QP = 0,
  RQ = 1,
  SQ = 2,
  DCT = 6,
};

// What the data of an EQE of a given type holds (mlx5_ifc.h union
// event_auto_bits: comp_event, cmd_inter_comp_event, pages_req_event,
// port_state_change_event, cq_error, qp_events; device.h union
// ev_data). The one classifier of event types: the driver dispatches on it
// (hca/hca.cpp) and the model posts by it (sim/fw/objects/events.cpp).
// kQpSrq: the events affiliated with a QP or SRQ (device.h MLX5_EVENT_TYPE_*
// 0x01-0x03, 0x05, 0x07, 0x10-0x14; eqe_qp_srq names the queue, an SRQ for
// 0x12-0x14). kOther: types the driver only logs (INTERNAL_ERROR has no
// data; the rest are not subscribed by kbv).
enum class EventData : uint8_t {
  kComp,         // eqe_comp: cqn
  kCmd,          // eqe_cmd: the completed slots' vector
  kPageRequest,  // eqe_page_req: function_id, num_pages
  kPortState,    // eqe_port_state: port_num (sub_type: PortChangeSubtype)
  kCqError,      // eqe_cq_err: cqn, syndrome
  kQpSrq,        // eqe_qp_srq: type (EventQueueType), qp_srq_n
  kOther,
};

constexpr EventData event_data(EventType t) {
  switch (t) {
    case EventType::COMP: return EventData::kComp;
    case EventType::CMD: return EventData::kCmd;
    case EventType::PAGE_REQUEST: return EventData::kPageRequest;
    case EventType::PORT_CHANGE: return EventData::kPortState;
    case EventType::CQ_ERROR: return EventData::kCqError;
    case EventType::PATH_MIG:
    case EventType::COMM_EST:
    case EventType::SQ_DRAINED:
    case EventType::WQ_CATAS_ERROR:
    case EventType::PATH_MIG_FAILED:
    case EventType::WQ_INVAL_REQ_ERROR:
    case EventType::WQ_ACCESS_ERROR:
    case EventType::SRQ_CATAS_ERROR:
    case EventType::SRQ_LAST_WQE:
    case EventType::SRQ_RQ_LIMIT: return EventData::kQpSrq;
    default: return EventData::kOther;
  }
}
// A raw eqe.type byte (values the PRM does not define are kOther).
constexpr EventData event_data(uint8_t type) { return event_data(static_cast<EventType>(type)); }

// eqe_cq_err.syndrome (mlx5_ifc.h MLX5_CQ_ERROR_SYNDROME_*).
enum class CqErrSyndrome : uint8_t {
  CQ_OVERRUN = 0x1,
  CQ_ACCESS_VIOLATION_ERROR = 0x2,
};

// True when the EQE at consumer index ci of an EQ of nent (a power of two)
// entries is software's (docs/PRM.md: (owner & 1) == ((ci & nent) != 0)).
constexpr bool eqe_is_sw_owned(uint8_t owner_byte, uint32_t ci, uint32_t nent) {
  return (owner_byte & 1) == ((ci & nent) != 0 ? 1 : 0);
}

}  // namespace kbv::prm
