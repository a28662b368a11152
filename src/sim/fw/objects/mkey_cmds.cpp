// SPDX-License-Identifier: BSD-3-Clause
//
// CREATE_MKEY / QUERY_MKEY / DESTROY_MKEY (mlx5_ifc.h create_mkey_in/out,
// query_mkey_in/out, destroy_mkey_in, mkc_bits, mtt_bits; prm/mkey.hpp).
// CREATE_MKEY checks, in order:
//   access mode MTT or PA (KLM/KSM/SW ICM/MEMIC: BAD_PARAM)    kMkeyAccessMode
//   umr_en, bsf_en, mkey_umem_valid all 0                      kMkeyUnsupported
//   qpn == 0xFFFFFF (keys bound to a QP are not offered)       kMkeyQpn
//   rw or a only with lw (IBTA 10.6.3.1: remote write/atomic
//     access requires local write)                             kMkeyRights
//   pd allocated                                   BAD_RES     kMkeyPdUnknown
//   MTT: log_page_size 12..30 (cap log_pg_sz .. 1 GiB)         kMkeyLogPageSize
//   MTT: length64 = 0 (an MTT list cannot cover 2^64 bytes)    kMkeyLength64
//   start_addr + len does not wrap                              kMkeyRange
//   MTT: translations_octword_size * 2 >= pages the region
//     spans (unless free = 1: entries come later)               kMkeyOctwords
//   translations_octword_actual_size <= translations_octword_size  kMkeyActualSize
//   model limit: at most 2^24 MTT entries                      kMkeyTooManyMtts
//   inlen holds the actual octwords                BAD_INP_LEN kMkeyMttTooShort
//   each MTT entry's page address aligned to the page size     kMkeyMttMisaligned
//   a free mkey_index below 2^log_max_mkey          NO_RES     kMkeyExhausted
// pg_access (page faults may be raised for this key: ODP, PRM "Page Fault
// Event") is accepted: the model raises no page-fault events, so a key whose
// MTT covers its region (the only kind it creates) behaves as on silicon, and
// an access the IOMMU cannot translate is an access error either way.
// rdma-core's mlx5_vfio sets it on every MR (mlx5_vfio.c mlx5_vfio_reg_mr).
// The key is mkey_index << 8 | mkey_7_0; create_mkey_out returns mkey_index.
// QUERY_MKEY returns the mkc as created and MTT entries 0..3.
#include "hca/prm/mkey.hpp"

#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

#include <algorithm>
#include <cstring>

namespace kbv::sim::fw {

namespace {

using namespace objutil;
using prm::mkc;

constexpr uint32_t kMinLogPage = 12;  // cmd_hca_cap.log_pg_sz: 4 KiB
constexpr uint32_t kMaxLogPage = 30;
constexpr uint64_t kMaxMtts = uint64_t{1} << 24;
constexpr uint32_t kQpnAny = 0xFFFFFF;  // mkc.qpn: not bound to a QP

Outcome create_mkey(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::create_mkey_in> in(c.in.data());
  prm::CRef<mkc> k = in.at(prm::create_mkey_in::memory_key_mkey_entry);

  Mkey m;
  m.access_mode = prm::get_access_mode(k);
  if (m.access_mode != prm::mkc_access_mode::kMtt && m.access_mode != prm::mkc_access_mode::kPa)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyAccessMode);
  if (k.get(mkc::umr_en) || k.get(mkc::bsf_en) || k.get(mkc::bsf_octword_size) ||
      in.get(prm::create_mkey_in::mkey_umem_valid))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyUnsupported);
  if (k.get(mkc::qpn) != kQpnAny) return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyQpn);

  m.rights = (k.get(mkc::lr) ? mkey_access::kLocalRead : 0) |
             (k.get(mkc::lw) ? mkey_access::kLocalWrite : 0) |
             (k.get(mkc::rr) ? mkey_access::kRemoteRead : 0) |
             (k.get(mkc::rw) ? mkey_access::kRemoteWrite : 0) |
             (k.get(mkc::a) ? mkey_access::kRemoteAtomic : 0);
  if ((m.rights & (mkey_access::kRemoteWrite | mkey_access::kRemoteAtomic)) &&
      !(m.rights & mkey_access::kLocalWrite))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyRights);

  m.pd = static_cast<uint32_t>(k.get(mkc::pd));
  Pd* pd = t.pd(m.pd);
  if (pd == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kMkeyPdUnknown);

  m.free = k.get(mkc::free) != 0;
  m.variant = static_cast<uint8_t>(k.get(mkc::mkey_7_0));
  m.start_addr = k.get(mkc::start_addr);
  m.len = k.get(mkc::len);
  m.length64 = k.get(mkc::length64) != 0;
  m.log_page_size = static_cast<uint32_t>(k.get(mkc::log_page_size));
  m.translations_octword_size = static_cast<uint32_t>(k.get(mkc::translations_octword_size));
  const uint64_t actual = in.get(prm::create_mkey_in::translations_octword_actual_size);

  if (!m.length64 && m.len != 0 && m.len - 1 > ~uint64_t{0} - m.start_addr)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyRange);
  if (m.access_mode == prm::mkc_access_mode::kMtt) {
    if (m.log_page_size < kMinLogPage || m.log_page_size > kMaxLogPage)
      return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyLogPageSize);
    if (m.length64) return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyLength64);
    const uint64_t page = uint64_t{1} << m.log_page_size;
    const uint64_t first = m.start_addr & ~(page - 1);
    const uint64_t pages =
        m.len == 0 ? 0 : ((m.start_addr + m.len - 1) & ~(page - 1)) / page - first / page + 1;
    if (uint64_t{m.translations_octword_size} * 2 > kMaxMtts)
      return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyTooManyMtts);
    if (!m.free && uint64_t{m.translations_octword_size} * 2 < pages)
      return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyOctwords);
    if (actual > m.translations_octword_size)
      return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyActualSize);
    if (prm::create_mkey_in::mtt_array.byte_off(0) + actual * 16 > c.in.size())
      return fail(CmdStatus::BAD_INP_LEN_ERR, synd::kMkeyMttTooShort);
    // Only the entries sent are kept (bounded by inlen): the rest of the
    // declared table could only be filled by UMR, which the model does not
    // offer, so pages beyond them translate as not present.
    m.mtt.resize(actual * 2);
    for (uint32_t i = 0; i < actual * 2; ++i) {
      prm::CRef<prm::mtt> e = in.elem<prm::mtt>(prm::create_mkey_in::mtt_array, i);
      const uint64_t iova = e.get(prm::mtt::ptag_63_32) << 32 | e.get(prm::mtt::ptag_31_8) << 8;
      if (iova % page != 0) return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyMttMisaligned);
      m.mtt[i] = {iova, e.get(prm::mtt::rd_en) != 0, e.get(prm::mtt::wr_en) != 0};
    }
  } else if (actual != 0) {
    // PA keys have no translation entries.
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kMkeyActualSize);
  }
  std::memcpy(m.mkc.data(), k.data(), m.mkc.size());

  auto idx = t.mkeys.insert(std::move(m), uint64_t{1} << cap(ctx, prm::cmd_hca_cap::log_max_mkey));
  if (!idx) return fail(CmdStatus::NO_RES_ERR, synd::kMkeyExhausted);
  ++pd->refs;
  prm::Ref<prm::create_mkey_out>(out.data()).set(prm::create_mkey_out::mkey_index, *idx);
  return Outcome::ok();
}

Outcome destroy_mkey(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  const auto idx = static_cast<uint32_t>(
      prm::CRef<prm::destroy_mkey_in>(c.in.data()).get(prm::destroy_mkey_in::mkey_index));
  const Mkey* m = t.mkeys.find(idx);
  if (m == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kDestroyMkeyUnknown);
  if (Pd* pd = t.pd(m->pd)) --pd->refs;
  t.mkeys.erase(idx);
  return Outcome::ok();
}

Outcome query_mkey(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  const auto idx = static_cast<uint32_t>(
      prm::CRef<prm::query_mkey_in>(c.in.data()).get(prm::query_mkey_in::mkey_index));
  const Mkey* m = t.mkeys.find(idx);
  if (m == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kQueryMkeyUnknown);
  prm::Ref<prm::query_mkey_out> o(out.data());
  prm::Ref<mkc> k = o.at(prm::query_mkey_out::memory_key_mkey_entry);
  std::memcpy(k.data(), m->mkc.data(), m->mkc.size());
  // MTT entries 0..3 in bsf0_klm0_pas_mtt0_1 / bsf1_klm1_pas_mtt2_3.
  std::array<std::byte, 32> mtts{};
  for (uint32_t i = 0; i < 4 && i < m->mtt.size(); ++i) {
    prm::Ref<prm::mtt> e(mtts.data() + 8 * i);
    e.set(prm::mtt::ptag_63_32, m->mtt[i].iova >> 32);
    e.set(prm::mtt::ptag_31_8, (m->mtt[i].iova >> 8) & 0xFFFFFF);
    e.set(prm::mtt::rd_en, m->mtt[i].rd_en);
    e.set(prm::mtt::wr_en, m->mtt[i].wr_en);
  }
  o.set_bytes(prm::query_mkey_out::bsf0_klm0_pas_mtt0_1, std::span(mtts).first(16));
  o.set_bytes(prm::query_mkey_out::bsf1_klm1_pas_mtt2_3, std::span(mtts).subspan(16));
  return Outcome::ok();
}

}  // namespace

void register_mkey_commands(CommandRegistry& r) {
  using prm::Opcode;
  (void)r.add(Opcode::CREATE_MKEY,
              Handler::make(bytes_of<prm::create_mkey_in>(), bytes_of<prm::create_mkey_out>(),
                            Requires::kInitialized, create_mkey));
  (void)r.add(Opcode::DESTROY_MKEY,
              Handler::make(bytes_of<prm::destroy_mkey_in>(), bytes_of<prm::destroy_mkey_out>(),
                            Requires::kInitialized, destroy_mkey));
  (void)r.add(Opcode::QUERY_MKEY,
              Handler::make(bytes_of<prm::query_mkey_in>(), bytes_of<prm::query_mkey_out>(),
                            Requires::kInitialized, query_mkey));
}

}  // namespace kbv::sim::fw
