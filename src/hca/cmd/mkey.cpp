// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/mkey.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

Status create_mkey(CmdQueue& q, const MkeyAttr& a, Done<uint32_t> done) {
  if (!fits(mkc::pd, a.pd) || a.log_page_size > 31) return Status{KBV_ERR_INVALID_ARGUMENT};
  const bool mtt_mode = a.access_mode == mkc_access_mode::kMtt;
  if (!mtt_mode && !a.mtt.empty()) return Status{KBV_ERR_INVALID_ARGUMENT};
  const uint64_t page = uint64_t{1} << a.log_page_size;
  for (uint64_t p : a.mtt)
    if (p % page != 0) return Status{KBV_ERR_INVALID_ARGUMENT};
  const uint32_t octwords = static_cast<uint32_t>((a.mtt.size() + 1) / 2);
  auto in = make_in(Opcode::CREATE_MKEY, 0, create_mkey_in::kBits / 8 + size_t{octwords} * 16);
  Ref<create_mkey_in> r(in.data());
  Ref<mkc> c = r.at(create_mkey_in::memory_key_mkey_entry);
  set_access_mode(c, a.access_mode);
  c.set(mkc::lr, a.lr);
  c.set(mkc::lw, a.lw);
  c.set(mkc::rr, a.rr);
  c.set(mkc::rw, a.rw);
  c.set(mkc::a, a.a);
  c.set(mkc::qpn, 0xFFFFFF);  // not bound to a QP
  c.set(mkc::mkey_7_0, a.mkey_7_0);
  c.set(mkc::pd, a.pd);
  c.set(mkc::start_addr, a.start_addr);
  c.set(mkc::len, a.len);
  if (mtt_mode) {
    c.set(mkc::log_page_size, a.log_page_size);
    c.set(mkc::translations_octword_size, octwords);
    r.set(create_mkey_in::translations_octword_actual_size, octwords);
    for (uint32_t i = 0; i < a.mtt.size(); ++i)
      r.set(create_mkey_in::mtt_array, i, mtt_entry(a.mtt[i], a.mtt_rd_en, a.mtt_wr_en));
  }
  const uint8_t variant = a.mkey_7_0;
  return exec<uint32_t>(
      q, in, create_mkey_out::kBits / 8,
      [variant](std::span<const std::byte> out) -> Result<uint32_t> {
        const auto idx = static_cast<uint32_t>(
            CRef<create_mkey_out>(out.data()).get(create_mkey_out::mkey_index));
        return mkey_from_index(idx, variant);
      },
      std::move(done));
}

Status destroy_mkey(CmdQueue& q, uint32_t mkey, DoneStatus done) {
  auto in = make_in(Opcode::DESTROY_MKEY, 0, destroy_mkey_in::kBits / 8);
  Ref<destroy_mkey_in>(in.data()).set(destroy_mkey_in::mkey_index, mkey_to_index(mkey));
  return exec_status(q, in, destroy_mkey_out::kBits / 8, std::move(done));
}

Status query_mkey(CmdQueue& q, uint32_t mkey, Done<MkeyInfo> done) {
  auto in = make_in(Opcode::QUERY_MKEY, 0, query_mkey_in::kBits / 8);
  Ref<query_mkey_in>(in.data()).set(query_mkey_in::mkey_index, mkey_to_index(mkey));
  return exec<MkeyInfo>(
      q, in, query_mkey_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<MkeyInfo> {
        CRef<query_mkey_out> o(out.data());
        CRef<mkc> c = o.at(query_mkey_out::memory_key_mkey_entry);
        MkeyInfo m;
        auto u = [&](Field<mkc> f) { return static_cast<uint32_t>(c.get(f)); };
        m.free = u(mkc::free) != 0;
        m.access_mode = get_access_mode(c);
        m.pd = u(mkc::pd);
        m.start_addr = c.get(mkc::start_addr);
        m.len = c.get(mkc::len);
        m.log_page_size = u(mkc::log_page_size);
        m.lr = u(mkc::lr) != 0;
        m.lw = u(mkc::lw) != 0;
        m.rr = u(mkc::rr) != 0;
        m.rw = u(mkc::rw) != 0;
        m.a = u(mkc::a) != 0;
        m.mkey_7_0 = static_cast<uint8_t>(u(mkc::mkey_7_0));
        m.qpn = u(mkc::qpn);
        m.translations_octword_size = u(mkc::translations_octword_size);
        // The first four MTT entries (bsf0_klm0_pas_mtt0_1, bsf1_klm1_pas_mtt2_3).
        const uint32_t n =
            m.translations_octword_size * 2 < 4 ? m.translations_octword_size * 2 : 4;
        const std::byte* base = o.bytes(query_mkey_out::bsf0_klm0_pas_mtt0_1).data();
        for (uint32_t i = 0; i < n; ++i) {
          CRef<mtt> e(base + 8 * i);
          m.mtt.push_back(e.get(mtt::ptag_63_32) << 32 | e.get(mtt::ptag_31_8) << 8);
          m.mtt_flags.push_back(static_cast<uint8_t>(e.get(mtt::rd_en) | e.get(mtt::wr_en) << 1));
        }
        return m;
      },
      std::move(done));
}

}  // namespace kbv::hca::cmd
