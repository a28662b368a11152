// SPDX-License-Identifier: BSD-3-Clause
//
// CREATE_UMEM / DESTROY_UMEM (prm/umem.hpp; rdma-core providers/mlx5/
// mlx5_ifc.h umem_bits, create_umem_in/out, destroy_umem_in) and the placement
// of CQ / QP buffers and doorbell records in a umem (umem.hpp here).
// CREATE_UMEM checks, in order:
//   num_of_mtt > 0                                       BAD_PARAM   kUmemNoMtt
//   log_page_size <= 18 (1 GiB pages)                    BAD_PARAM   kUmemLogPageSize
//   page_offset < the page size                          BAD_PARAM   kUmemPageOffset
//   num_of_mtt <= kMaxUmemMtts (model limit)             BAD_PARAM   kUmemTooManyMtts
//   inlen holds num_of_mtt entries                       BAD_INP_LEN kUmemMttTooShort
//   each entry's address page aligned                    BAD_PARAM   kUmemMttMisaligned
//   each entry rd_en                                     BAD_PARAM   kUmemNoAccess
//   a free umem_id below 2^24                            NO_RES      kUmemExhausted
// DESTROY_UMEM: umem_id known (BAD_RES kDestroyUmemUnknown), no CQ / QP
// buffer or doorbell record in it (RES_BUSY kDestroyUmemInUse, as the
// object-in-use rule of objects.hpp).
// The pages themselves are reached through the IOMMU when the engine uses
// them, like pas[] pages (objects.hpp "Buffers").
#include "sim/fw/objects/umem.hpp"

#include "hca/prm/umem.hpp"
#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

namespace kbv::sim::fw {

namespace {

using namespace objutil;

// The model keeps each umem's page list in memory: 1 Mi entries (4 GiB of
// 4 KiB pages) per umem at most.
constexpr uint64_t kMaxUmemMtts = uint64_t{1} << 20;

Outcome create_umem(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::create_umem_in> in(c.in.data());
  prm::CRef<prm::umem> u = in.at(prm::create_umem_in::umem);
  const uint64_t n = u.get(prm::umem::num_of_mtt);
  if (n == 0) return fail(CmdStatus::BAD_PARAM_ERR, synd::kUmemNoMtt);
  Umem m;
  m.log_page_size = static_cast<uint32_t>(u.get(prm::umem::log_page_size));
  if (m.log_page_size > kMaxLogPageSize)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kUmemLogPageSize);
  m.page_offset = u.get(prm::umem::page_offset);
  if (m.page_offset >= m.page_bytes()) return fail(CmdStatus::BAD_PARAM_ERR, synd::kUmemPageOffset);
  if (n > kMaxUmemMtts) return fail(CmdStatus::BAD_PARAM_ERR, synd::kUmemTooManyMtts);
  if (prm::create_umem_in::mtt.byte_off(0) + n * 8 > c.in.size())
    return fail(CmdStatus::BAD_INP_LEN_ERR, synd::kUmemMttTooShort);
  m.pages.resize(n);
  m.writable = true;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t e = in.get(prm::create_umem_in::mtt, i);
    const uint64_t pa = e & prm::kMttPtagMask;
    if (pa % m.page_bytes() != 0) return fail(CmdStatus::BAD_PARAM_ERR, synd::kUmemMttMisaligned);
    if (!(e & 1)) return fail(CmdStatus::BAD_PARAM_ERR, synd::kUmemNoAccess);  // rd_en
    m.writable = m.writable && (e & 2) != 0;                                   // wr_en
    m.pages[i] = pa;
  }
  auto id = t.umem_ids.alloc(uint64_t{1} << 24);
  if (!id) return fail(CmdStatus::NO_RES_ERR, synd::kUmemExhausted);
  t.umems.emplace(*id, std::move(m));
  prm::Ref<prm::create_umem_out>(out.data()).set(prm::create_umem_out::umem_id, *id);
  return Outcome::ok();
}

Outcome destroy_umem(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  const auto id = static_cast<uint32_t>(
      prm::CRef<prm::destroy_umem_in>(c.in.data()).get(prm::destroy_umem_in::umem_id));
  Umem* m = t.umem(id);
  if (m == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kDestroyUmemUnknown);
  if (m->refs != 0) return fail(CmdStatus::RES_BUSY, synd::kDestroyUmemInUse);
  t.umems.erase(id);
  t.umem_ids.release(id);
  return Outcome::ok();
}

}  // namespace

Outcome umem_place_buffer(ObjectTables& t, prm::Opcode op, uint32_t id, uint64_t offset,
                          uint64_t bytes, bool device_writes, WqBuffer& buf) {
  const Umem* m = t.umem(id);
  if (m == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::at(op, synd::kUmemUnknown));
  if (bytes == 0 || offset > m->size() || bytes > m->size() - offset)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::at(op, synd::kUmemRange));
  if (device_writes && !m->writable)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::at(op, synd::kUmemReadOnly));
  const uint64_t pb = m->page_bytes();
  const uint64_t first = m->page_offset + offset;
  const uint64_t last = first + bytes - 1;
  buf.log_page_size = m->log_page_size;
  buf.page_offset = 0;
  buf.byte_offset = first % pb;
  buf.pas.assign(m->pages.begin() + static_cast<std::ptrdiff_t>(first / pb),
                 m->pages.begin() + static_cast<std::ptrdiff_t>(last / pb + 1));
  return Outcome::ok();
}

Outcome umem_place_dbr(ObjectTables& t, prm::Opcode op, uint32_t id, uint64_t offset,
                       uint64_t* iova) {
  const Umem* m = t.umem(id);
  if (m == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::at(op, synd::kUmemUnknown));
  if (offset > m->size() || m->size() - offset < 8)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::at(op, synd::kUmemRange));
  const uint64_t a = m->page_offset + offset;  // byte in the umem's pages
  if (a % 8 != 0) return fail(CmdStatus::BAD_PARAM_ERR, synd::at(op, synd::kUmemDbrAlign));
  if (!m->writable) return fail(CmdStatus::BAD_PARAM_ERR, synd::at(op, synd::kUmemReadOnly));
  *iova = m->pages[a / m->page_bytes()] + a % m->page_bytes();
  return Outcome::ok();
}

void umem_ref(ObjectTables& t, uint32_t id, int delta) {
  if (Umem* m = t.umem(id)) m->refs = static_cast<uint32_t>(static_cast<int64_t>(m->refs) + delta);
}

void register_umem_commands(CommandRegistry& r) {
  using prm::Opcode;
  (void)r.add(Opcode::CREATE_UMEM,
              Handler::make(bytes_of<prm::create_umem_in>(), bytes_of<prm::create_umem_out>(),
                            Requires::kInitialized, create_umem));
  (void)r.add(Opcode::DESTROY_UMEM,
              Handler::make(bytes_of<prm::destroy_umem_in>(), bytes_of<prm::destroy_umem_out>(),
                            Requires::kInitialized, destroy_umem));
}

}  // namespace kbv::sim::fw
