// SPDX-License-Identifier: BSD-3-Clause
//
// The model firmware's object tables (an FwContext extension): protection
// and transport domains, memory keys, CQs, SRQs, QPs, multicast groups, and
// the port's vport / RoCE address state. The command handlers in this
// directory fill them; the data-path engine reads them (CQ and WQ buffers as
// IOVAs, doorbell records, QP state and attributes, the mkey translation).
//
// Each object keeps the context image it was created with (and that the
// modify commands changed), which the QUERY commands return, and the decoded
// values the engine needs. References between objects are counted so that
// destroying an object still in use is refused (RES_BUSY, see objects.hpp).
//
// Layout sources: mlx5_ifc.h cqc_bits, srqc_bits, qpc_bits, ads_bits,
// roce_addr_layout_bits (prm/cq.hpp, srq.hpp, qpc.hpp, vport.hpp).
//
// Threading: written by the firmware thread only. A function reset or
// TEARDOWN_HCA destroys the extension (FwContext::teardown()), as silicon
// forgets all objects. The data-path engine must not read a table while a
// command that changes it executes (see mkey_table.hpp).
#pragma once

#include "hca/prm/cq.hpp"
#include "hca/prm/qpc.hpp"
#include "hca/prm/srq.hpp"
#include "sim/fw/context.hpp"
#include "sim/fw/objects/handles.hpp"
#include "sim/fw/objects/mkey_table.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace kbv::sim::fw {

using Gid = std::array<uint8_t, 16>;

// A WQ / CQ buffer as the driver described it: pages of
// 4 KiB << log_page_size bytes, the buffer starting page_offset *
// (page_size / 64) bytes into pas[0] (PRM "CQ/QP context": page_offset is
// in 64ths of a page).
// A buffer placed in a DEVX umem (cq_umem_valid / wq_umem_valid) is the
// umem's pages from the one holding its first byte, which sits byte_offset
// bytes into pas[0] (page_offset 0).
struct WqBuffer {
  uint32_t log_page_size = 0;
  uint32_t page_offset = 0;
  uint64_t byte_offset = 0;  // umem placement only
  std::vector<uint64_t> pas;
  uint64_t page_bytes() const { return uint64_t{4096} << log_page_size; }
  uint64_t offset_bytes() const { return page_offset * (page_bytes() / 64) + byte_offset; }
};

// A DEVX user memory region (CREATE_UMEM, prm/umem.hpp): pages of
// 4 KiB << log_page_size at the IOVAs of its MTT entries, its first byte
// page_offset bytes into pages[0].
struct Umem {
  uint32_t log_page_size = 0;
  uint64_t page_offset = 0;
  std::vector<uint64_t> pages;
  bool writable = false;  // every MTT entry has wr_en
  uint32_t refs = 0;      // CQ / QP buffers and doorbell records placed in it
  uint64_t page_bytes() const { return uint64_t{4096} << log_page_size; }
  uint64_t size() const { return pages.size() * page_bytes() - page_offset; }
};

struct Pd {
  uint32_t refs = 0;  // mkeys, QPs and SRQs of this PD
};

struct Cq {
  uint32_t cqn = 0;
  uint32_t log_cq_size = 0;  // 1 << log_cq_size CQEs of 64 bytes
  uint32_t uar_page = 0;
  uint32_t c_eqn = 0;
  WqBuffer buf;
  uint64_t dbr_addr = 0;  // IOVA (resolved from the umem when dbr_umem_valid)
  uint32_t buf_umem = 0;  // umem_id holding the buffer (cq_umem_valid), 0: pas[]
  uint32_t dbr_umem = 0;  // umem_id holding the doorbell record, 0: dbr_addr is an IOVA
  bool oi = false;        // overrun ignore
  uint32_t cq_period_mode = 0;
  uint32_t cq_period = 0;     // microseconds
  uint32_t cq_max_count = 0;  // CQEs
  // Kept by the data-path engine: arm state (prm::cqc_st), status
  // (prm::cqc_status), CQEs written, CQEs consumed (from the doorbell record).
  uint32_t st = 0;
  uint32_t status = 0;
  uint32_t producer_counter = 0;
  uint32_t consumer_counter = 0;
  uint32_t refs = 0;  // QPs (send and receive) and SRQs using this CQ
  // The data-path engine's state of this object (sim/engine/engine.hpp),
  // opaque here; it dies with the object (DESTROY, reset, teardown).
  std::shared_ptr<void> dp_state;
  std::array<std::byte, prm::cqc::kBits / 8> cqc{};
};

struct Srq {
  uint32_t srqn = 0;
  uint32_t log_srq_size = 0;   // 1 << log_srq_size WQEs
  uint32_t log_rq_stride = 0;  // WQE = 16 << log_rq_stride bytes
  uint32_t pd = 0;
  uint32_t cqn = 0;  // 0: none
  WqBuffer buf;
  uint64_t dbr_addr = 0;
  uint32_t lwm = 0;                // limit watermark (WQEs)
  bool armed = false;              // an SRQ limit event is due when fewer than lwm WQEs remain
  uint32_t state = 0;              // prm::srqc_state
  uint32_t wqe_cnt = 0;            // engine: WQEs posted
  uint32_t refs = 0;               // QPs receiving from this SRQ
  std::shared_ptr<void> dp_state;  // the engine's (see Cq::dp_state)
  std::array<std::byte, prm::srqc::kBits / 8> srqc{};
};

// The primary address path as the engine uses it (mlx5_ifc.h ads_bits; RoCE).
struct QpPath {
  uint32_t vhca_port_num = 0;
  uint32_t pkey_index = 0;
  bool grh = false;
  uint32_t src_addr_index = 0;  // GID (RoCE address) table index
  Gid rgid{};                   // destination GID / IP
  std::array<uint8_t, 6> rmac{};
  uint32_t udp_sport = 0;
  uint32_t hop_limit = 0;
  uint32_t tclass = 0;
  uint32_t flow_label = 0;
  uint32_t sl = 0;
  uint32_t stat_rate = 0;
  uint32_t ack_timeout = 0;  // 4.096 us << ack_timeout, 0 = infinite
};

// Progress counters of a QP, kept by the data-path engine and reported by
// QUERY_QP (mlx5_ifc.h qpc_bits: hw/sw_sq_wqebb_counter, hw/sw_rq_counter,
// last_acked_psn, ssn, rmsn, cur_retry_count, cur_rnr_retry). 2RST zeroes them.
struct QpCounters {
  uint32_t hw_sq_wqebb_counter = 0;  // SQ basic blocks executed
  uint32_t sw_sq_wqebb_counter = 0;  // SQ basic blocks posted (doorbell record)
  uint32_t hw_rq_counter = 0;        // receive WQEs consumed
  uint32_t sw_rq_counter = 0;        // receive WQEs posted (doorbell record)
  uint32_t last_acked_psn = 0;
  uint32_t ssn = 0;
  uint32_t rmsn = 0;
  uint32_t cur_retry_count = 0;
  uint32_t cur_rnr_retry = 0;
};

struct Qp {
  uint32_t qpn = 0;
  uint32_t state = prm::qp_state::kRst;
  uint32_t st = prm::qpc_st::kRc;
  uint32_t pd = 0;
  uint32_t cqn_snd = 0;  // 0 when no_sq
  uint32_t cqn_rcv = 0;
  uint32_t rq_type = prm::qpc_rq_type::kNonZeroRq;
  uint32_t srqn = 0;  // rq_type == kSrqRq
  bool no_sq = false;
  uint32_t log_sq_size = 0;    // SQ: 1 << log_sq_size basic blocks of 64 bytes
  uint32_t log_rq_size = 0;    // RQ: 1 << log_rq_size WQEs
  uint32_t log_rq_stride = 0;  // of 16 << log_rq_stride bytes
  uint32_t uar_page = 0;
  uint64_t dbr_addr = 0;  // IOVA: [0] receive counter, [1] send counter
  uint32_t buf_umem = 0;  // umem_id holding the WQ buffer (wq_umem_valid), 0: pas[]
  uint32_t dbr_umem = 0;  // umem_id holding the doorbell record (dbr_umem_valid)
  WqBuffer buf;           // RQ at byte 0, SQ after it (sq_offset)
  uint64_t rq_bytes = 0;
  uint64_t sq_offset = 0;
  uint64_t sq_bytes = 0;
  uint32_t user_index = 0;
  uint32_t log_msg_max = 0;
  // Transport attributes (set by the transitions).
  uint32_t mtu = 0;  // prm::qpc_mtu
  uint32_t remote_qpn = 0;
  uint32_t next_send_psn = 0;
  uint32_t next_rcv_psn = 0;
  uint32_t retry_count = 0;
  uint32_t rnr_retry = 0;
  uint32_t min_rnr_nak = 0;
  uint32_t log_sra_max = 0;
  uint32_t log_rra_max = 0;
  bool rre = false, rwe = false, rae = false;
  uint32_t atomic_mode = 0;
  uint32_t q_key = 0;
  uint32_t pm_state = 0;
  QpPath path;
  QpCounters counters;             // engine-owned
  std::shared_ptr<void> dp_state;  // the engine's (see Cq::dp_state); 2RST drops it
  uint32_t mcg_count = 0;          // multicast groups this QP is attached to
  std::array<std::byte, prm::qpc::kBits / 8> qpc{};      // current context image
  std::array<std::byte, prm::qpc::kBits / 8> created{};  // as created (2RST restores it)
};

// One RoCE address table (GID table) entry (mlx5_ifc.h roce_addr_layout_bits).
struct RoceAddr {
  bool valid = false;  // an all-zero SET_ROCE_ADDRESS clears the entry
  Gid l3{};
  std::array<uint8_t, 6> mac{};
  uint32_t l3_type = 0;  // prm::roce_l3_type
  uint32_t version = 0;  // prm::roce_version
  bool vlan_valid = false;
  uint32_t vlan_id = 0;
};

// The port / vport state the vport commands report and modify.
struct PortState {
  static constexpr uint32_t kDefaultMtu = 9216;  // bytes incl. L2 headers (jumbo)
  uint8_t host = 1;      // the port's address is 127.0.0.host (docs/DESIGN.md "Wire")
  bool bound = false;    // host set by set_port_host / object_commands()
  bool up = true;        // link and port active
  bool roce_en = false;  // MODIFY_NIC_VPORT_CONTEXT roce_en (drivers set it at bring-up)
  uint32_t mtu = kDefaultMtu;
  bool disable_uc_local_lb = false;
  bool disable_mc_local_lb = false;
  bool promisc_uc = false, promisc_mc = false, promisc_all = false;
  bool event_on_mtu = false;
  // The port's P_Key table (IBTA 10.9.1; QUERY_HCA_VPORT_PKEY,
  // cmd_hca_cap.pkey_table_size 0 = 128 entries): entry 0 is the default
  // P_Key 0xFFFF, the others 0 (an invalid P_Key) until set (Model::set_pkey,
  // as a subnet manager would). A QP's packets carry pkeys[its pkey_index]
  // in their BTH; a received request whose BTH P_Key does not match that
  // entry (IBTA 10.9.3) is dropped and counted in pkey_violations
  // (hca_vport_context.pkey_violation_counter). Atomics: set on the firmware
  // thread, read by the engine on any thread that runs it.
  static constexpr uint32_t kPkeyTableSize = 128;
  std::array<std::atomic<uint16_t>, kPkeyTableSize> pkeys{};
  std::atomic<uint32_t> pkey_violations{0};
  PortState() { pkeys[0].store(0xFFFF, std::memory_order_relaxed); }
  uint16_t pkey(uint32_t index) const {
    return index < kPkeyTableSize ? pkeys[index].load(std::memory_order_relaxed) : 0;
  }
  std::array<uint8_t, 6> mac() const { return {0x02, 0x6b, 0x62, 0x76, 0x00, host}; }
};

class ObjectTables : public Extension {
 public:
  static constexpr uint32_t kRoceAddrTableSize = 256;  // roce_cap.roce_address_table_size
  static constexpr uint32_t kPkeyTableSize = PortState::kPkeyTableSize;

  ObjectTables() { reset_roce_table(); }

  // Extension: CQs point at their completion EQ; CQs and QPs ring their UAR
  // page (DESTROY_EQ / DEALLOC_UAR are refused while they do).
  bool references_eq(uint32_t eqn) const override {
    for (const auto& [n, c] : cqs)
      if (c.c_eqn == eqn) return true;
    return false;
  }
  bool references_uar(uint32_t uar) const override {
    for (const auto& [n, c] : cqs)
      if (c.uar_page == uar) return true;
    for (const auto& [n, q] : qps)
      if (q.uar_page == uar) return true;
    return false;
  }

  std::map<uint32_t, Pd> pds;
  IndexAllocator pd_ids{1};
  std::map<uint32_t, bool> tds;
  IndexAllocator td_ids{1};
  MkeyTable mkeys;
  std::map<uint32_t, Cq> cqs;
  IndexAllocator cq_ids{1};
  std::map<uint32_t, Srq> srqs;
  IndexAllocator srq_ids{1};
  std::map<uint32_t, Qp> qps;
  IndexAllocator qp_ids{2};  // QPN 0 and 1 are the special QP0 / QP1 (IBTA 3.5.6)
  std::map<uint32_t, Umem> umems;
  IndexAllocator umem_ids{1};
  std::map<Gid, std::vector<uint32_t>> mcgs;  // multicast GID -> attached QPNs
  // QPNs moved to ERR by a 2ERR_QP command since the data-path engine last
  // took them (it flushes them; sim/engine/transport.cpp run()).
  std::vector<uint32_t> qps_to_err;
  PortState port;
  std::array<RoceAddr, kRoceAddrTableSize> roce{};

  Cq* cq(uint32_t cqn) {
    auto it = cqs.find(cqn);
    return it == cqs.end() ? nullptr : &it->second;
  }
  Srq* srq(uint32_t srqn) {
    auto it = srqs.find(srqn);
    return it == srqs.end() ? nullptr : &it->second;
  }
  Qp* qp(uint32_t qpn) {
    auto it = qps.find(qpn);
    return it == qps.end() ? nullptr : &it->second;
  }
  Umem* umem(uint32_t id) {
    auto it = umems.find(id);
    return it == umems.end() ? nullptr : &it->second;
  }
  Pd* pd(uint32_t pdn) {
    auto it = pds.find(pdn);
    return it == pds.end() ? nullptr : &it->second;
  }

  // Index 0 of the RoCE address table is the port's own address:
  // ::ffff:127.0.0.host, RoCEv2, IPv4, the port MAC (docs/DESIGN.md "Wire"); the
  // model plays the host stack that configured it.
  void reset_roce_table();
};

// The tables of a firmware context (created on first use).
inline ObjectTables& objects(FwContext& ctx) { return ctx.ext<ObjectTables>(); }

// The IPv4-mapped GID ::ffff:a.b.c.d (IBTA Annex A17 / RFC 4291 2.5.5.2).
Gid ipv4_mapped_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d);

}  // namespace kbv::sim::fw
