// SPDX-License-Identifier: BSD-3-Clause
// CREATE_MKEY / QUERY_MKEY / DESTROY_MKEY (src/sim/fw/objects/mkey_cmds.cpp)
// and the data-path translation (mkey_table.hpp).
#include "fw_obj_support.hpp"

namespace kbv::sim::fw::objtest {
namespace {

constexpr uint32_t kAll = mkey_access::kLocalRead | mkey_access::kLocalWrite |
                          mkey_access::kRemoteRead | mkey_access::kRemoteWrite |
                          mkey_access::kRemoteAtomic;

class MkeyTest : public ObjFixture {
 protected:
  // An MTT key over npages pages of 4 KiB at `va`; page i maps to pages[i].
  std::vector<std::byte> mkey_cmd(uint32_t pd, uint64_t va, uint64_t len,
                                  const std::vector<uint64_t>& pages, uint8_t variant = 0x5a) {
    const uint32_t octwords = static_cast<uint32_t>((pages.size() + 1) / 2);
    auto in = cmd<prm::create_mkey_in>(Opcode::CREATE_MKEY, 0, 16 * octwords);
    prm::Ref<prm::create_mkey_in> c(in.data());
    auto k = c.at(prm::create_mkey_in::memory_key_mkey_entry);
    prm::set_access_mode(k, prm::mkc_access_mode::kMtt);
    for (auto f : {prm::mkc::lr, prm::mkc::lw, prm::mkc::rr, prm::mkc::rw, prm::mkc::a})
      k.set(f, 1);
    k.set(prm::mkc::qpn, 0xFFFFFF);
    k.set(prm::mkc::mkey_7_0, variant);
    k.set(prm::mkc::pd, pd);
    k.set(prm::mkc::start_addr, va);
    k.set(prm::mkc::len, len);
    k.set(prm::mkc::log_page_size, 12);
    k.set(prm::mkc::translations_octword_size, octwords);
    c.set(prm::create_mkey_in::translations_octword_actual_size, octwords);
    for (uint32_t i = 0; i < pages.size(); ++i)
      c.set(prm::create_mkey_in::mtt_array, i, prm::mtt_entry(pages[i], true, true));
    return in;
  }
  prm::Ref<prm::mkc> mkc_of(std::vector<std::byte>& in) {
    return prm::Ref<prm::create_mkey_in>(in.data()).at(prm::create_mkey_in::memory_key_mkey_entry);
  }
  Reply create(const std::vector<std::byte>& in) { return exec(in, 16); }
  void expect_fail(const std::vector<std::byte>& in, CmdStatus s, uint32_t synd) {
    Reply r = create(in);
    EXPECT_EQ(r.status(), st(s));
    EXPECT_EQ(r.syndrome(), synd);
  }
};

TEST_F(MkeyTest, CreateQueryDestroy) {
  const uint32_t pd = alloc_pd();
  auto in = mkey_cmd(pd, 0x7000'0000'1000, 3 * 4096, {0x10000000, 0x10002000, 0x10001000});
  Reply r = create(in);
  ASSERT_EQ(r.status(), 0);
  const uint32_t idx = field(r, prm::create_mkey_out::mkey_index);
  ASSERT_NE(idx, 0u);
  const Mkey* m = tables().mkeys.find(idx);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->key(), idx << 8 | 0x5a);
  EXPECT_EQ(m->pd, pd);
  EXPECT_EQ(m->rights, kAll);
  ASSERT_EQ(m->mtt.size(), 4u);  // 2 octwords
  EXPECT_EQ(m->mtt[1].iova, 0x10002000u);

  auto q = cmd<prm::query_mkey_in>(Opcode::QUERY_MKEY);
  prm::Ref<prm::query_mkey_in>(q.data()).set(prm::query_mkey_in::mkey_index, idx);
  Reply qr = exec(q, prm::query_mkey_out::kBits / 8);
  ASSERT_EQ(qr.status(), 0);
  prm::CRef<prm::query_mkey_out> o(qr.out.data());
  auto k = o.at(prm::query_mkey_out::memory_key_mkey_entry);
  EXPECT_EQ(k.get(prm::mkc::start_addr), 0x7000'0000'1000u);
  EXPECT_EQ(k.get(prm::mkc::len), 3u * 4096);
  EXPECT_EQ(k.get(prm::mkc::pd), pd);
  EXPECT_EQ(k.get(prm::mkc::mkey_7_0), 0x5au);
  EXPECT_EQ(prm::get_access_mode(k), prm::mkc_access_mode::kMtt);
  prm::CRef<prm::mtt> mtt1(o.bytes(prm::query_mkey_out::bsf0_klm0_pas_mtt0_1).data() + 8);
  EXPECT_EQ(mtt1.get(prm::mtt::ptag_31_8) << 8, 0x10002000u);
  EXPECT_EQ(mtt1.get(prm::mtt::rd_en), 1u);

  auto d = cmd<prm::destroy_mkey_in>(Opcode::DESTROY_MKEY);
  prm::Ref<prm::destroy_mkey_in>(d.data()).set(prm::destroy_mkey_in::mkey_index, idx);
  ASSERT_EQ(exec(d, 16).status(), 0);
  Reply again = exec(d, 16);
  EXPECT_EQ(again.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(again.syndrome(), synd::kDestroyMkeyUnknown);
  EXPECT_EQ(exec(q, prm::query_mkey_out::kBits / 8).syndrome(), synd::kQueryMkeyUnknown);
  EXPECT_EQ(dealloc_pd(pd).status(), 0);  // no longer referenced
}

TEST_F(MkeyTest, KeyKeepsItsPdBusy) {
  const uint32_t pd = alloc_pd();
  ASSERT_EQ(create(mkey_cmd(pd, 0x1000, 4096, {0x10000000})).status(), 0);
  EXPECT_EQ(dealloc_pd(pd).status(), st(CmdStatus::RES_BUSY));
}

TEST_F(MkeyTest, BadFieldsAreRefused) {
  const uint32_t pd = alloc_pd();
  const std::vector<uint64_t> one{0x10000000};
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, one);
    prm::set_access_mode(mkc_of(in), prm::mkc_access_mode::kKlms);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyAccessMode);
  }
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, one);
    mkc_of(in).set(prm::mkc::umr_en, 1);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyUnsupported);
  }
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, one);
    mkc_of(in).set(prm::mkc::qpn, 5);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyQpn);
  }
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, one);
    mkc_of(in).set(prm::mkc::lw, 0);  // remote write without local write
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyRights);
  }
  {
    auto in = mkey_cmd(pd + 7, 0x1000, 4096, one);
    expect_fail(in, CmdStatus::BAD_RES_ERR, synd::kMkeyPdUnknown);
  }
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, one);
    mkc_of(in).set(prm::mkc::log_page_size, 11);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyLogPageSize);
  }
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, one);
    mkc_of(in).set(prm::mkc::length64, 1);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyLength64);
  }
  {
    auto in = mkey_cmd(pd, ~uint64_t{0} - 100, 4096, one);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyRange);
  }
  {
    // 3 pages need 2 octwords; 1 is declared.
    auto in = mkey_cmd(pd, 0x1800, 2 * 4096, {0x10000000, 0x10001000});
    mkc_of(in).set(prm::mkc::translations_octword_size, 1);
    prm::Ref<prm::create_mkey_in>(in.data()).set(
        prm::create_mkey_in::translations_octword_actual_size, 1);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyOctwords);
  }
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, one);
    prm::Ref<prm::create_mkey_in>(in.data()).set(
        prm::create_mkey_in::translations_octword_actual_size, 2);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyActualSize);
  }
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, one);
    in.resize(in.size() - 16);  // the octword is announced but not sent
    expect_fail(in, CmdStatus::BAD_INP_LEN_ERR, synd::kMkeyMttTooShort);
  }
  {
    auto in = mkey_cmd(pd, 0x1000, 4096, {0x10000800});
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kMkeyMttMisaligned);
  }
  EXPECT_EQ(tables().mkeys.size(), 0u);
}

TEST_F(MkeyTest, EntriesNotSentTranslateAsNotPresent) {
  const uint32_t pd = alloc_pd();
  // 4 pages declared (2 octwords), only the first octword (pages 0, 1) sent.
  auto in = mkey_cmd(pd, 0x20000, 4 * 4096, {0x10000000, 0x10001000, 0, 0});
  prm::Ref<prm::create_mkey_in>(in.data()).set(
      prm::create_mkey_in::translations_octword_actual_size, 1);
  in.resize(in.size() - 16);
  Reply r = create(in);
  ASSERT_EQ(r.status(), 0) << std::hex << r.syndrome();
  const uint32_t key = field(r, prm::create_mkey_out::mkey_index) << 8 | 0x5a;
  IovaRange out[4];
  TranslateResult ok = tables().mkeys.translate(key, 0x20000, 2 * 4096, kAll, pd, out);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.ranges, 1u);
  EXPECT_EQ(out[0].len, 2u * 4096);
  EXPECT_EQ(tables().mkeys.translate(key, 0x22000, 8, mkey_access::kLocalRead, pd, out).fault,
            MkeyFault::kMttNotPresent);
}

TEST_F(MkeyTest, ExhaustionIsNoResources) {
  prm::Ref<prm::cmd_hca_cap>(fw_->context().caps().cur(0).data())
      .set(prm::cmd_hca_cap::log_max_mkey, 0);
  const uint32_t pd = alloc_pd();
  ASSERT_EQ(create(mkey_cmd(pd, 0x1000, 4096, {0x10000000})).status(), 0);
  expect_fail(mkey_cmd(pd, 0x1000, 4096, {0x10000000}), CmdStatus::NO_RES_ERR,
              synd::kMkeyExhausted);
}

// Index reuse is delayed (mkey_table.hpp): a destroyed key's index is not
// the next one handed out, and its old key stays invalid for the new region.
TEST_F(MkeyTest, DestroyedIndexIsNotReusedNext) {
  const uint32_t pd = alloc_pd();
  std::vector<uint32_t> seen;
  for (int i = 0; i < 8; ++i) {
    Reply r = create(mkey_cmd(pd, 0x1000, 4096, {0x10000000}));
    ASSERT_EQ(r.status(), 0);
    const uint32_t idx = field(r, prm::create_mkey_out::mkey_index);
    for (uint32_t old : seen) EXPECT_NE(idx, old) << "index reused after " << seen.size();
    const uint32_t key = idx << 8 | 0x5a;
    auto d = cmd<prm::destroy_mkey_in>(Opcode::DESTROY_MKEY);
    prm::Ref<prm::destroy_mkey_in>(d.data()).set(prm::destroy_mkey_in::mkey_index, idx);
    ASSERT_EQ(exec(d, 16).status(), 0);
    IovaRange out[1];
    EXPECT_EQ(tables().mkeys.translate(key, 0x1000, 8, mkey_access::kLocalRead, pd, out).fault,
              MkeyFault::kInvalidKey);
    seen.push_back(idx);
  }
}

TEST(MkeyTableIndex, RoundRobinWrapsAndSkipsLiveIndexes) {
  MkeyTable t;
  // max 4: indexes 2..5.
  std::vector<uint32_t> idx;
  for (int i = 0; i < 4; ++i) idx.push_back(*t.insert(Mkey{}, 4));
  EXPECT_EQ(idx, (std::vector<uint32_t>{2, 3, 4, 5}));
  EXPECT_FALSE(t.insert(Mkey{}, 4).has_value());
  ASSERT_TRUE(t.erase(3));
  ASSERT_TRUE(t.erase(2));
  // The search starts after 5, wraps, finds 2 (freed first in index order).
  EXPECT_EQ(*t.insert(Mkey{}, 4), 2u);
  EXPECT_EQ(*t.insert(Mkey{}, 4), 3u);
  ASSERT_TRUE(t.erase(4));
  ASSERT_TRUE(t.erase(2));
  EXPECT_EQ(*t.insert(Mkey{}, 4), 4u);  // after 3, not the lowest free (2)
}

TEST(MkeyTableIndex, VariantMismatchIsInvalidKey) {
  MkeyTable t;
  Mkey m;
  m.variant = 7;
  m.access_mode = prm::mkc_access_mode::kPa;
  m.length64 = true;
  m.rights = mkey_access::kLocalRead;
  const uint32_t i = *t.insert(m, 16);
  IovaRange out[1];
  EXPECT_TRUE(t.translate(i << 8 | 7, 0x1000, 8, mkey_access::kLocalRead, 0, out).ok());
  EXPECT_EQ(t.translate(i << 8 | 6, 0x1000, 8, mkey_access::kLocalRead, 0, out).fault,
            MkeyFault::kInvalidKey);
}

TEST_F(MkeyTest, PaModeTranslatesIdentity) {
  const uint32_t pd = alloc_pd();
  auto in = mkey_cmd(pd, 0, 0, {});
  auto k = mkc_of(in);
  prm::set_access_mode(k, prm::mkc_access_mode::kPa);
  k.set(prm::mkc::length64, 1);
  k.set(prm::mkc::translations_octword_size, 0);
  Reply r = create(in);
  ASSERT_EQ(r.status(), 0) << std::hex << r.syndrome();
  const uint32_t key = field(r, prm::create_mkey_out::mkey_index) << 8 | 0x5a;
  IovaRange out[2];
  TranslateResult t = tables().mkeys.translate(key, 0x12345678, 100, kAll, pd, out);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t.ranges, 1u);
  EXPECT_EQ(out[0].iova, 0x12345678u);
  EXPECT_EQ(out[0].len, 100u);
}

// The translation itself, on a table filled directly.
class MkeyTranslate : public ::testing::Test {
 protected:
  void SetUp() override {
    Mkey m;
    m.variant = 0x33;
    m.access_mode = prm::mkc_access_mode::kMtt;
    m.rights = mkey_access::kLocalRead | mkey_access::kLocalWrite | mkey_access::kRemoteRead;
    m.pd = 7;
    m.start_addr = 0x4000'0800;  // half a page into the first page
    m.len = 3 * 4096;            // ends 0x800 into the fourth page
    m.log_page_size = 12;
    // Pages 0 and 1 contiguous, page 2 elsewhere, page 3 read-only.
    m.mtt = {{0x9000'0000, true, true},
             {0x9000'1000, true, true},
             {0x5000'0000, true, true},
             {0x6000'0000, true, false}};
    idx_ = *table_.insert(m, 16);
    key_ = idx_ << 8 | 0x33;
  }
  TranslateResult tr(uint64_t va, uint64_t len, uint32_t rights, uint32_t pd = 7,
                     uint32_t key = 0) {
    return table_.translate(key ? key : key_, va, len, rights, pd, out_);
  }
  MkeyTable table_;
  uint32_t idx_ = 0, key_ = 0;
  IovaRange out_[4];
};

TEST_F(MkeyTranslate, MergesContiguousPagesAndSplitsAcrossEntries) {
  TranslateResult t = tr(0x4000'0800, 0x2000, mkey_access::kLocalRead);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t.ranges, 2u);
  EXPECT_EQ(out_[0].iova, 0x9000'0800u);  // pages 0 and 1 merged
  EXPECT_EQ(out_[0].len, 0x1800u);
  EXPECT_EQ(out_[1].iova, 0x5000'0000u);
  EXPECT_EQ(out_[1].len, 0x800u);
}

TEST_F(MkeyTranslate, BoundsAreExact) {
  EXPECT_TRUE(tr(0x4000'0800, 3 * 4096, mkey_access::kLocalRead).ok());
  EXPECT_EQ(tr(0x4000'07FF, 1, mkey_access::kLocalRead).fault, MkeyFault::kOutOfBounds);
  EXPECT_EQ(tr(0x4000'0800, 3 * 4096 + 1, mkey_access::kLocalRead).fault, MkeyFault::kOutOfBounds);
  EXPECT_EQ(tr(0x4000'3800, 1, mkey_access::kLocalRead).fault, MkeyFault::kOutOfBounds);
  EXPECT_EQ(tr(~uint64_t{0}, 2, mkey_access::kLocalRead).fault, MkeyFault::kOutOfBounds);
}

TEST_F(MkeyTranslate, RightsPdAndKeyAreChecked) {
  EXPECT_EQ(tr(0x4000'0800, 8, mkey_access::kRemoteWrite).fault, MkeyFault::kAccess);
  EXPECT_EQ(tr(0x4000'0800, 8, mkey_access::kRemoteAtomic).fault, MkeyFault::kAccess);
  EXPECT_TRUE(tr(0x4000'0800, 8, mkey_access::kRemoteRead).ok());
  EXPECT_EQ(tr(0x4000'0800, 8, mkey_access::kLocalRead, 8).fault, MkeyFault::kPdMismatch);
  EXPECT_EQ(tr(0x4000'0800, 8, mkey_access::kLocalRead, 7, idx_ << 8 | 0x34).fault,
            MkeyFault::kInvalidKey);
  EXPECT_EQ(tr(0x4000'0800, 8, mkey_access::kLocalRead, 7, (idx_ + 1) << 8 | 0x33).fault,
            MkeyFault::kInvalidKey);
}

TEST_F(MkeyTranslate, MttWriteEnableIsHonoured) {
  // Page 3 (va 0x4000'3000..) is read-only in its MTT entry.
  EXPECT_TRUE(tr(0x4000'3000, 0x800, mkey_access::kLocalRead).ok());
  EXPECT_EQ(tr(0x4000'3000, 0x800, mkey_access::kLocalWrite).fault, MkeyFault::kMttNotPresent);
  EXPECT_EQ(out_[0].iova, 0x6000'0000u);
}

TEST_F(MkeyTranslate, OutputSpanTooSmall) {
  TranslateResult t =
      table_.translate(key_, 0x4000'0800, 3 * 4096, mkey_access::kLocalRead, 7, std::span(out_, 2));
  EXPECT_EQ(t.fault, MkeyFault::kTooManyRanges);
}

TEST_F(MkeyTranslate, FreeKeyIsInvalidAndZeroLengthNeedsOnlyTheKey) {
  Mkey f;
  f.free = true;
  f.pd = 7;
  f.rights = mkey_access::kLocalRead;
  const uint32_t i = *table_.insert(f, 16);
  EXPECT_EQ(table_.translate(i << 8, 0, 1, mkey_access::kLocalRead, 7, out_).fault,
            MkeyFault::kInvalidKey);
  TranslateResult z = tr(0, 0, mkey_access::kLocalRead);
  EXPECT_TRUE(z.ok());
  EXPECT_EQ(z.ranges, 0u);
  EXPECT_EQ(table_.count_pd(7), 2u);
  EXPECT_TRUE(table_.erase(i));
  EXPECT_FALSE(table_.erase(i));
}

// Each check of translate() on its own, at its edge (issue 21): exact end and
// one past, the 64-bit wrap of a length64 key, zero length (key, PD and
// rights still checked), PD mismatch, and every access right alone.
TEST_F(MkeyTranslate, ExactEndAndOnePastAtEveryOffset) {
  const uint64_t start = 0x4000'0800, end = start + 3 * 4096;
  for (uint64_t va : {start, start + 1, start + 0x7FF, start + 0x1000, end - 1}) {
    SCOPED_TRACE(va);
    EXPECT_TRUE(tr(va, end - va, mkey_access::kLocalRead).ok());
    EXPECT_EQ(tr(va, end - va + 1, mkey_access::kLocalRead).fault, MkeyFault::kOutOfBounds);
  }
  EXPECT_EQ(tr(end, 1, mkey_access::kLocalRead).fault, MkeyFault::kOutOfBounds);
  EXPECT_EQ(tr(start - 1, 2, mkey_access::kLocalRead).fault, MkeyFault::kOutOfBounds);
  // A length that wraps the 64-bit offset arithmetic.
  EXPECT_EQ(tr(start + 8, ~uint64_t{0} - 6, mkey_access::kLocalRead).fault,
            MkeyFault::kOutOfBounds);
}

TEST_F(MkeyTranslate, Length64KeyEndsAtTheTopOfTheAddressSpace) {
  Mkey m;
  m.variant = 0x44;
  m.access_mode = prm::mkc_access_mode::kPa;
  m.rights = mkey_access::kLocalRead;
  m.pd = 7;
  m.start_addr = 0x1000;
  m.length64 = true;
  const uint32_t key = *table_.insert(m, 16) << 8 | 0x44;
  const uint64_t top = ~uint64_t{0};
  auto t = [&](uint64_t va, uint64_t len) {
    return table_.translate(key, va, len, mkey_access::kLocalRead, 7, out_);
  };
  EXPECT_TRUE(t(top - 7, 8).ok());
  EXPECT_TRUE(t(top, 1).ok());
  EXPECT_TRUE(t(0x1000, top - 0xFFF).ok());  // [0x1000, 2^64): the whole key
  EXPECT_EQ(t(top - 7, 9).fault, MkeyFault::kOutOfBounds);
  EXPECT_EQ(t(top, 2).fault, MkeyFault::kOutOfBounds);
  EXPECT_EQ(t(0x1000, top - 0xFFE).fault, MkeyFault::kOutOfBounds);
  EXPECT_EQ(t(0xFFF, 1).fault, MkeyFault::kOutOfBounds);
}

TEST_F(MkeyTranslate, ZeroLengthStillChecksKeyPdAndRights) {
  EXPECT_TRUE(tr(0, 0, mkey_access::kLocalRead).ok());
  EXPECT_EQ(tr(0, 0, mkey_access::kLocalRead, 8).fault, MkeyFault::kPdMismatch);
  EXPECT_EQ(tr(0, 0, mkey_access::kRemoteWrite).fault, MkeyFault::kAccess);
  EXPECT_EQ(tr(0, 0, mkey_access::kLocalRead, 7, idx_ << 8 | 0x34).fault, MkeyFault::kInvalidKey);
}

TEST_F(MkeyTranslate, PdMismatchIsRefusedWhateverTheRange) {
  for (uint32_t pd : {0u, 6u, 8u, 7u | 0x800000u})
    EXPECT_EQ(tr(0x4000'0800, 8, mkey_access::kLocalRead, pd).fault, MkeyFault::kPdMismatch) << pd;
  EXPECT_TRUE(tr(0x4000'0800, 8, mkey_access::kLocalRead, 7).ok());
}

TEST_F(MkeyTranslate, EachAccessRightIsCheckedOnItsOwn) {
  const uint32_t rights[] = {mkey_access::kLocalRead, mkey_access::kLocalWrite,
                             mkey_access::kRemoteRead, mkey_access::kRemoteWrite,
                             mkey_access::kRemoteAtomic};
  for (uint32_t granted : rights) {
    Mkey m;
    m.variant = 0x55;
    m.access_mode = prm::mkc_access_mode::kPa;
    m.rights = granted;
    m.pd = 9;
    m.start_addr = 0x1000;
    m.len = 0x1000;
    const uint32_t key = *table_.insert(m, 16) << 8 | 0x55;
    for (uint32_t asked : rights) {
      const TranslateResult t = table_.translate(key, 0x1000, 8, asked, 9, out_);
      if (asked == granted)
        EXPECT_TRUE(t.ok()) << granted << " " << asked;
      else
        EXPECT_EQ(t.fault, MkeyFault::kAccess) << granted << " " << asked;
    }
    // Asking for two rights needs both.
    const uint32_t other =
        granted == mkey_access::kLocalRead ? mkey_access::kLocalWrite : mkey_access::kLocalRead;
    EXPECT_EQ(table_.translate(key, 0x1000, 8, granted | other, 9, out_).fault, MkeyFault::kAccess);
  }
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
