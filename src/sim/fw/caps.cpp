// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/caps.hpp"

#include "hca/prm/qpc.hpp"

#include "sim/fw/context.hpp"
#include "sim/fw/syndromes.hpp"

#include <algorithm>

namespace kbv::sim::fw {

namespace {

using prm::atomic_caps;
using prm::cmd_hca_cap;
using prm::CmdStatus;
using prm::roce_cap;

constexpr uint16_t type_of(prm::CapType t) { return static_cast<uint16_t>(t); }

// A one-port Ethernet ConnectX-5 doing RoCEv2, as far as the model goes.
// Limits are log2 unless named otherwise (mlx5_ifc.h cmd_hca_cap_bits).
void fill_general(prm::Ref<cmd_hca_cap> c, bool is_max, bool checksum) {
  c.set(cmd_hca_cap::log_max_srq_sz, 15);  // 32 Ki WQEs per SRQ
  c.set(cmd_hca_cap::log_max_qp_sz, 15);   // 32 Ki WQEs per work queue (max_qp_sz)
  c.set(cmd_hca_cap::log_max_qp, 18);      // 256 Ki QPs
  c.set(cmd_hca_cap::log_max_srq, 20);
  c.set(cmd_hca_cap::log_max_cq_sz, 22);  // 4 Mi CQEs per CQ
  c.set(cmd_hca_cap::log_max_cq, 24);
  c.set(cmd_hca_cap::log_max_eq_sz, 22);
  c.set(cmd_hca_cap::log_max_mkey, 24);
  c.set(cmd_hca_cap::log_max_eq, kLogMaxEq);
  c.set(cmd_hca_cap::max_indirection, 4);
  c.set(cmd_hca_cap::log_max_mrw_sz, 64);  // a memory region may span 2^64 bytes
  c.set(cmd_hca_cap::log_max_klm_list_size, 16);
  c.set(cmd_hca_cap::log_max_ra_req_qp, 4);  // 16 outstanding RDMA reads/atomics
  c.set(cmd_hca_cap::log_max_ra_res_qp, 4);
  c.set(cmd_hca_cap::pkey_table_size, 0);  // 128 entries (encoded: 0 = 128)
  c.set(cmd_hca_cap::local_ca_ack_delay, 16);
  c.set(cmd_hca_cap::port_type, 1);  // Ethernet
  c.set(cmd_hca_cap::num_ports, 1);
  c.set(cmd_hca_cap::log_max_msg, 30);  // 1 GiB messages
  c.set(cmd_hca_cap::stat_rate_support, 0);
  c.set(cmd_hca_cap::cqe_version, is_max ? 1 : 0);
  c.set(cmd_hca_cap::cmdif_checksum, is_max ? 3 : (checksum ? 3 : 0));
  c.set(cmd_hca_cap::roce, 1);
  c.set(cmd_hca_cap::atomic, 1);
  c.set(cmd_hca_cap::cq_oi, 1);
  c.set(cmd_hca_cap::cq_resize, 1);
  c.set(cmd_hca_cap::cq_moderation, 1);
  c.set(cmd_hca_cap::rc, 1);
  c.set(cmd_hca_cap::uc, 1);
  c.set(cmd_hca_cap::ud, 1);
  c.set(cmd_hca_cap::xrc, 0);
  c.set(cmd_hca_cap::dct, 0);
  c.set(cmd_hca_cap::uar_4k, is_max ? 1 : 0);
  c.set(cmd_hca_cap::uar_sz, 0);      // UAR area 1 MiB << uar_sz
  c.set(cmd_hca_cap::log_pg_sz, 12);  // smallest page the device maps: 4 KiB
  c.set(cmd_hca_cap::bf, 1);
  c.set(cmd_hca_cap::driver_version, 1);               // SET_DRIVER_VERSION accepted
  c.set(cmd_hca_cap::log_bf_reg_size, kLogBfRegSize);  // bus/pci_device.hpp
  c.set(cmd_hca_cap::max_wqe_sz_sq, 1024);
  c.set(cmd_hca_cap::max_wqe_sz_rq, 512);
  c.set(cmd_hca_cap::max_qp_mcg, 240);
  c.set(cmd_hca_cap::log_max_mcg, 17);
  c.set(cmd_hca_cap::log_max_transport_domain, 20);
  c.set(cmd_hca_cap::log_max_pd, 24);
  c.set(cmd_hca_cap::log_max_xrcd, 0);
  c.set(cmd_hca_cap::log_uar_page_sz, 0);             // in 4 KiB units (log2): 4 KiB
  c.set(cmd_hca_cap::device_frequency_khz, 1000000);  // internal timer: 1 GHz
  c.set(cmd_hca_cap::num_of_uars_per_page, 1);
  c.set(cmd_hca_cap::umem_uid_0, 1);
}

void fill_roce(prm::Ref<roce_cap> c) {
  c.set(roce_cap::l3_type, prm::kRoceL3TypeIpv4Cap | prm::kRoceL3TypeIpv6Cap);
  c.set(roce_cap::roce_version, prm::kRoceVersion2Cap);
  c.set(roce_cap::r_roce_dest_udp_port, 4791);  // IBTA Annex A17: RoCEv2 UDP port
  c.set(roce_cap::r_roce_max_src_udp_port, 0xFFFF);
  c.set(roce_cap::r_roce_min_src_udp_port, 0xC000);
  c.set(roce_cap::roce_address_table_size, 256);
  // CQE timestamps: the free-running internal timer only (no real-time
  // clock; mlx5_ifc.h MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING).
  c.set(roce_cap::qp_ts_format, prm::qpc_ts_format::kCapFreeRunning);
}

void fill_atomic(prm::Ref<atomic_caps> c) {
  c.set(atomic_caps::atomic_operations, prm::kAtomicOpCmpSwap | prm::kAtomicOpFetchAdd);
  c.set(atomic_caps::atomic_size_qp, prm::kAtomicSizeQp8Bytes);
}

}  // namespace

Caps::Caps(bool checksum) : checksum_default_(checksum) { reset(); }

void Caps::reset() {
  sets_.clear();
  for (prm::CapType t : {prm::CapType::GENERAL, prm::CapType::ATOMIC, prm::CapType::ROCE}) {
    Set s{type_of(t), std::vector<std::byte>(kBytes), std::vector<std::byte>(kBytes)};
    for (int is_max = 0; is_max < 2; ++is_max) {
      std::byte* p = is_max ? s.max.data() : s.cur.data();
      switch (t) {
        case prm::CapType::GENERAL:
          fill_general(prm::Ref<cmd_hca_cap>(p), is_max, checksum_default_);
          break;
        case prm::CapType::ROCE: fill_roce(prm::Ref<roce_cap>(p)); break;
        case prm::CapType::ATOMIC: fill_atomic(prm::Ref<atomic_caps>(p)); break;
        default: break;
      }
    }
    sets_.push_back(std::move(s));
  }
}

Caps::Set* Caps::find(uint16_t type) {
  for (Set& s : sets_)
    if (s.type == type) return &s;
  return nullptr;
}
const Caps::Set* Caps::find(uint16_t type) const {
  for (const Set& s : sets_)
    if (s.type == type) return &s;
  return nullptr;
}

std::span<const std::byte> Caps::max(uint16_t t) const {
  const Set* s = find(t);
  return s ? std::span<const std::byte>(s->max) : std::span<const std::byte>();
}
std::span<std::byte> Caps::cur(uint16_t t) {
  Set* s = find(t);
  return s ? std::span<std::byte>(s->cur) : std::span<std::byte>();
}
std::span<const std::byte> Caps::cur(uint16_t t) const {
  const Set* s = find(t);
  return s ? std::span<const std::byte>(s->cur) : std::span<const std::byte>();
}

prm::CRef<cmd_hca_cap> Caps::general() const {
  return prm::CRef<cmd_hca_cap>(find(type_of(prm::CapType::GENERAL))->cur.data());
}
prm::CRef<cmd_hca_cap> Caps::general_max() const {
  return prm::CRef<cmd_hca_cap>(find(type_of(prm::CapType::GENERAL))->max.data());
}
prm::CRef<roce_cap> Caps::roce() const {
  return prm::CRef<roce_cap>(find(type_of(prm::CapType::ROCE))->cur.data());
}

bool Caps::checksum_enabled() const { return general().get(cmd_hca_cap::cmdif_checksum) != 0; }

Outcome Caps::set(uint16_t cap_type, std::span<const std::byte> req) {
  Set* s = find(cap_type);
  if (s == nullptr || req.size() < kBytes)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kSetCapTypeUnsupported);
  if (cap_type != type_of(prm::CapType::GENERAL)) return Outcome::ok();

  prm::CRef<cmd_hca_cap> in(req.data());
  prm::CRef<cmd_hca_cap> mx(s->max.data());
  prm::Ref<cmd_hca_cap> cur(s->cur.data());
  // The settable fields; a value above max is refused, nothing is applied.
  static constexpr prm::Field<cmd_hca_cap> kSettable[] = {
      cmd_hca_cap::log_max_qp,  cmd_hca_cap::pkey_table_size, cmd_hca_cap::uar_4k,
      cmd_hca_cap::cqe_version, cmd_hca_cap::cmdif_checksum,
  };
  for (const auto& f : kSettable)
    if (in.get(f) > mx.get(f))
      return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kSetCapAboveMax);
  // cmdif_checksum: 0 (off) or the supported value; log_uar_page_sz: the
  // driver's page size in 4 KiB units, log2 (0..8: 4 KiB..1 MiB, the UAR area).
  const uint64_t cs = in.get(cmd_hca_cap::cmdif_checksum);
  if (cs != 0 && cs != mx.get(cmd_hca_cap::cmdif_checksum))
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kSetCapBadValue);
  if (in.get(cmd_hca_cap::log_uar_page_sz) > 8)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kSetCapBadValue);
  for (const auto& f : kSettable) cur.set(f, in.get(f));
  cur.set(cmd_hca_cap::log_uar_page_sz, in.get(cmd_hca_cap::log_uar_page_sz));
  return Outcome::ok();
}

// ---- commands ------------------------------------------------------------------

namespace {

constexpr uint32_t kCapCmdBytes = prm::query_hca_cap_out::kBits / 8;  // 16 + 4096

// QUERY_HCA_CAP (mlx5_ifc.h query_hca_cap_in/out): op_mod = cap_type << 1 |
// mode (1 = current, 0 = max).
Outcome query_hca_cap(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::query_hca_cap_in> in(c.in.data());
  if (in.get(prm::query_hca_cap_in::other_function) != 0 ||
      in.get(prm::query_hca_cap_in::function_id) != 0)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kCapTypeUnsupported);
  const uint16_t type = c.op_mod >> 1;
  const bool current = (c.op_mod & 1) == static_cast<uint16_t>(prm::CapMode::CUR);
  std::span<const std::byte> src = current ? ctx.caps().cur(type) : ctx.caps().max(type);
  if (src.empty()) return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kCapTypeUnsupported);
  prm::Ref<prm::query_hca_cap_out> o(out.data());
  std::copy(src.begin(), src.end(), out.begin() + prm::query_hca_cap_out::capability.off / 8);
  (void)o;
  return Outcome::ok();
}

// SET_HCA_CAP (mlx5_ifc.h set_hca_cap_in): op_mod = cap_type << 1; only
// before INIT_HCA.
Outcome set_hca_cap(FwContext& ctx, const Command& c, std::span<std::byte>) {
  if (ctx.hca().initialized)
    return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kSetCapAfterInit);
  if (c.op_mod & 1) return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kBadOpMod);
  prm::CRef<prm::set_hca_cap_in> in(c.in.data());
  if (in.get(prm::set_hca_cap_in::other_function) != 0 ||
      in.get(prm::set_hca_cap_in::function_id) != 0)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kSetCapTypeUnsupported);
  return ctx.caps().set(c.op_mod >> 1,
                        c.in.subspan(prm::set_hca_cap_in::capability.off / 8, Caps::kBytes));
}

}  // namespace

void register_cap_commands(CommandRegistry& r) {
  (void)r.add(prm::Opcode::QUERY_HCA_CAP,
              Handler::any_mod(prm::query_hca_cap_in::kBits / 8, kCapCmdBytes, Requires::kEnabled,
                               query_hca_cap));
  (void)r.add(prm::Opcode::SET_HCA_CAP,
              Handler::any_mod(prm::set_hca_cap_in::kBits / 8, prm::set_hca_cap_out::kBits / 8,
                               Requires::kEnabled, set_hca_cap));
}

}  // namespace kbv::sim::fw
