// SPDX-License-Identifier: BSD-3-Clause
// CREATE_UMEM / DESTROY_UMEM and CQ / QP buffers and doorbell records placed
// in a umem (src/sim/fw/objects/umem_cmds.cpp).
#include "fw_obj_support.hpp"

#include "hca/prm/umem.hpp"

namespace kbv::sim::fw::objtest {
namespace {

class UmemTest : public ObjFixture {
 protected:
  // CREATE_UMEM of `pages` 4 KiB pages starting `page_offset` bytes into the
  // first; each MTT entry rd_en | wr_en (when `writable`).
  std::vector<std::byte> umem_cmd(uint32_t pages, uint32_t page_offset = 0, bool writable = true) {
    auto in = cmd<prm::create_umem_in>(Opcode::CREATE_UMEM, 0, 8 * pages);
    prm::Ref<prm::create_umem_in> c(in.data());
    auto u = c.at(prm::create_umem_in::umem);
    u.set(prm::umem::log_page_size, 0);
    u.set(prm::umem::page_offset, page_offset);
    u.set(prm::umem::num_of_mtt, pages);
    const uint64_t buf = host_->dma().alloc(pages * 4096);
    for (uint32_t i = 0; i < pages; ++i)
      c.set(prm::create_umem_in::mtt, i, (buf + 4096 * i) | (writable ? 3 : 1));
    base_ = buf;
    return in;
  }
  uint32_t create_umem(uint32_t pages, uint32_t page_offset = 0) {
    Reply r = exec(umem_cmd(pages, page_offset), 16);
    EXPECT_EQ(r.status(), 0);
    return field(r, prm::create_umem_out::umem_id);
  }
  Reply destroy_umem(uint32_t id) {
    auto in = cmd<prm::destroy_umem_in>(Opcode::DESTROY_UMEM);
    prm::Ref<prm::destroy_umem_in>(in.data()).set(prm::destroy_umem_in::umem_id, id);
    return exec(in, 16);
  }
  // CREATE_CQ of 16 CQEs (1 KiB) at `off` in umem `id`, its doorbell record at
  // `dbr_off` in umem `dbr_id`.
  std::vector<std::byte> umem_cq_cmd(uint32_t id, uint64_t off, uint32_t dbr_id, uint64_t dbr_off) {
    auto in = cmd<prm::create_cq_in>(Opcode::CREATE_CQ);
    prm::Ref<prm::create_cq_in> c(in.data());
    c.set(prm::create_cq_in::cq_umem_valid, 1);
    c.set(prm::create_cq_in::cq_umem_id, id);
    c.set(prm::create_cq_in::cq_umem_offset, off);
    auto x = c.at(prm::create_cq_in::cq_context);
    x.set(prm::cqc::log_cq_size, 4);
    x.set(prm::cqc::uar_page, uar_);
    x.set(prm::cqc::c_eqn, eqn_);
    x.set(prm::cqc::dbr_umem_valid, 1);
    x.set(prm::cqc::dbr_umem_id, dbr_id);
    x.set(prm::cqc::dbr_addr, dbr_off);
    return in;
  }
  uint64_t base_ = 0;  // IOVA of the last umem_cmd's first page
};

TEST_F(UmemTest, CqBufferAndDoorbellLiveInTheUmem) {
  const uint32_t id = create_umem(3, 0x100);  // umem byte 0 = page 0 + 0x100
  const uint64_t base = base_;
  // CQEs at umem offset 0xF80: page 1 + 0x80 .. page 1 + 0x47F.
  Reply r = exec(umem_cq_cmd(id, 0xF80, id, 0x2000), 16);
  ASSERT_EQ(r.status(), 0);
  const Cq* q = tables().cq(field(r, prm::create_cq_out::cqn));
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->buf.pas.size(), 1u);
  EXPECT_EQ(q->buf.pas[0], base + 0x1000);
  EXPECT_EQ(q->buf.offset_bytes(), 0x80u);
  EXPECT_EQ(q->dbr_addr, base + 0x2100);  // umem 0x2000 = page 2 + 0x100
  // The umem is in use until the CQ goes.
  Reply busy = destroy_umem(id);
  EXPECT_EQ(busy.status(), st(CmdStatus::RES_BUSY));
  EXPECT_EQ(busy.syndrome(), synd::kDestroyUmemInUse);
  EXPECT_EQ(destroy_cq(q->cqn).status(), 0);
  EXPECT_EQ(destroy_umem(id).status(), 0);
  Reply again = destroy_umem(id);
  EXPECT_EQ(again.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(again.syndrome(), synd::kDestroyUmemUnknown);
}

TEST_F(UmemTest, PlacementChecks) {
  const uint32_t id = create_umem(1);
  auto expect = [&](const std::vector<std::byte>& in, CmdStatus s, uint16_t check) {
    Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), st(s));
    EXPECT_EQ(r.syndrome(), synd::at(Opcode::CREATE_CQ, check));
  };
  expect(umem_cq_cmd(id + 7, 0, id, 0x800), CmdStatus::BAD_RES_ERR, synd::kUmemUnknown);
  expect(umem_cq_cmd(id, 0xC01, id, 0x800), CmdStatus::BAD_PARAM_ERR, synd::kUmemRange);
  expect(umem_cq_cmd(id, 0, id, 0xFF8 + 8), CmdStatus::BAD_PARAM_ERR, synd::kUmemRange);
  // The record's address is what must be 8-byte aligned: umem byte 0x800 of
  // a umem starting 4 bytes into its page is not.
  const uint32_t odd = create_umem(1, 4);
  expect(umem_cq_cmd(id, 0, odd, 0x800), CmdStatus::BAD_PARAM_ERR, synd::kUmemDbrAlign);
  Reply ro = exec(umem_cmd(1, 0, false), 16);
  ASSERT_EQ(ro.status(), 0);
  const uint32_t ro_id = field(ro, prm::create_umem_out::umem_id);
  expect(umem_cq_cmd(ro_id, 0, id, 0x800), CmdStatus::BAD_PARAM_ERR, synd::kUmemReadOnly);
  // A well-placed CQ still works after the refusals.
  EXPECT_EQ(exec(umem_cq_cmd(id, 0xC00, id, 0x800), 16).status(), 0);
}

TEST_F(UmemTest, CreateChecks) {
  auto expect = [&](std::vector<std::byte> in, CmdStatus s, uint32_t synd) {
    Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), st(s));
    EXPECT_EQ(r.syndrome(), synd);
  };
  auto umem_of = [](std::vector<std::byte>& in) {
    return prm::Ref<prm::create_umem_in>(in.data()).at(prm::create_umem_in::umem);
  };
  {
    auto in = umem_cmd(1);
    umem_of(in).set(prm::umem::num_of_mtt, 0);
    expect(in, CmdStatus::BAD_PARAM_ERR, synd::kUmemNoMtt);
  }
  {
    auto in = umem_cmd(1);
    umem_of(in).set(prm::umem::page_offset, 4096);
    expect(in, CmdStatus::BAD_PARAM_ERR, synd::kUmemPageOffset);
  }
  {
    auto in = umem_cmd(1);
    umem_of(in).set(prm::umem::num_of_mtt, 2);  // inlen holds one entry
    expect(in, CmdStatus::BAD_INP_LEN_ERR, synd::kUmemMttTooShort);
  }
  {
    auto in = umem_cmd(1);
    prm::Ref<prm::create_umem_in>(in.data()).set(prm::create_umem_in::mtt, 0, base_ + 0x803);
    expect(in, CmdStatus::BAD_PARAM_ERR, synd::kUmemMttMisaligned);
  }
  {
    auto in = umem_cmd(1);
    prm::Ref<prm::create_umem_in>(in.data()).set(prm::create_umem_in::mtt, 0, base_ | 2);
    expect(in, CmdStatus::BAD_PARAM_ERR, synd::kUmemNoAccess);
  }
}

TEST_F(UmemTest, QpWorkQueueAndDoorbellInUmem) {
  const QpSpec s = spec();
  const uint32_t id = create_umem(2);
  const uint64_t base = base_;
  auto in = qp_cmd(s);
  prm::Ref<prm::create_qp_in> c(in.data());
  c.set(prm::create_qp_in::wq_umem_valid, 1);
  c.set(prm::create_qp_in::wq_umem_id, id);
  c.set(prm::create_qp_in::wq_umem_offset, 0);
  auto x = c.at(prm::create_qp_in::qpc);
  x.set(prm::qpc::dbr_umem_valid, 1);
  x.set(prm::qpc::dbr_umem_id, id);
  x.set(prm::qpc::dbr_addr, 0x1FC0);
  Reply r = exec(in, 16);
  ASSERT_EQ(r.status(), 0) << std::hex << r.syndrome();
  const Qp* q = tables().qp(field(r, prm::create_qp_out::qpn));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->buf.pas.front(), base);
  EXPECT_EQ(q->dbr_addr, base + 0x1FC0);
  EXPECT_EQ(destroy_umem(id).status(), st(CmdStatus::RES_BUSY));
  EXPECT_EQ(destroy_qp(q->qpn).status(), 0);
  EXPECT_EQ(destroy_umem(id).status(), 0);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
