// SPDX-License-Identifier: BSD-3-Clause
// Event queues of the model firmware: CREATE/QUERY/DESTROY_EQ, command
// completion EQEs (event mode), arming and MSI-X, page-request EQEs, overrun.
#include "hca/prm/eq.hpp"
#include "fw_test_support.hpp"
#include "hca/prm/eqe.hpp"
#include "hca/prm/uar.hpp"
#include "sim/fw/syndromes.hpp"

#include <gtest/gtest.h>

namespace kbv::sim::fw {
namespace {

using prm::CmdStatus;
using prm::EventType;
using prm::Opcode;
using test::make_cmd;

class FwEq : public test::FwFixture {
 protected:
  void SetUp() override {
    test::FwFixture::SetUp();
    bring_up();
    test::Reply a = run(Opcode::ALLOC_UAR, 0, 16, 16);
    ASSERT_EQ(a.status(), 0);
    uar_ = static_cast<uint32_t>(
        prm::CRef<prm::alloc_uar_out>(a.out.data()).get(prm::alloc_uar_out::uar));
  }

  struct Eq {
    uint32_t eqn = 0;
    uint64_t buf = 0;
    uint32_t nent = 0;
  };
  // CREATE_EQ of 1 << log_size EQEs, owner bytes initialised to 1.
  test::Reply create(uint32_t log_size, std::initializer_list<EventType> events, uint32_t intr,
                     Eq* eq, uint64_t pas_override = 0) {
    const uint32_t nent = 1u << log_size;
    const uint32_t npages = (nent * 64 + 4095) / 4096;
    const uint64_t buf = host_->dma().alloc(npages * 4096);
    for (uint32_t i = 0; i < nent; ++i) host_->dma().host(buf)[i * 64 + 63] = std::byte{1};
    auto in = make_cmd(Opcode::CREATE_EQ, 0, prm::create_eq_in_len(npages));
    prm::Ref<prm::create_eq_in> c(in.data());
    auto ec = c.at(prm::create_eq_in::eq_context_entry);
    ec.set(prm::eqc::log_eq_size, log_size);
    ec.set(prm::eqc::uar_page, uar_);
    ec.set(prm::eqc::intr, intr);
    for (EventType t : events)
      c.set(prm::create_eq_in::event_bitmask, prm::event_word(t),
            c.get(prm::create_eq_in::event_bitmask, prm::event_word(t)) | prm::event_bit(t));
    for (uint32_t i = 0; i < npages; ++i)
      c.set(prm::create_eq_in::pas, i, pas_override ? pas_override : buf + i * 4096);
    test::Reply r = host_->exec(in, 16);
    if (eq && r.status() == 0) {
      eq->eqn = static_cast<uint32_t>(
          prm::CRef<prm::create_eq_out>(r.out.data()).get(prm::create_eq_out::eq_number));
      eq->buf = buf;
      eq->nent = nent;
    }
    return r;
  }
  // Waits (bounded) until EQE ci is software's; returns a view or nullptr.
  const std::byte* wait_eqe(const Eq& eq, uint32_t ci) {
    const std::byte* e = host_->dma().host(eq.buf) + (ci & (eq.nent - 1)) * 64;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!prm::eqe_is_sw_owned(
        std::atomic_ref<const uint8_t>(*reinterpret_cast<const uint8_t*>(e + 63)).load(), ci,
        eq.nent)) {
      if (std::chrono::steady_clock::now() > until) return nullptr;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return e;
  }
  void doorbell(const Eq& eq, uint32_t ci, bool arm) {
    pci_.write32(static_cast<uint32_t>(prm::uar_page_offset(uar_)) +
                     (arm ? prm::kEqDoorbellArmOff : prm::kEqDoorbellUpdateOff),
                 prm::eq_doorbell_value(ci, eq.eqn));
  }
  // MSI-X count on v, waiting up to `ms` for at least one.
  uint64_t msix_after(unsigned v, int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    uint64_t n = 0;
    do {
      n += pci_.take_msix(v);
      if (n) return n;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    } while (std::chrono::steady_clock::now() < until);
    return n;
  }

  uint32_t uar_ = 0;
};

TEST_F(FwEq, CommandCompletionsArriveAsEqesAndMsixOnlyWhenArmed) {
  Eq eq;
  ASSERT_EQ(create(4, {EventType::CMD, EventType::PAGE_REQUEST}, 3, &eq).status(), 0);
  // Not armed yet: the EQE arrives, no interrupt.
  ASSERT_TRUE(host_->exec(make_cmd(Opcode::NOP), 16, 3).done);
  const std::byte* e = wait_eqe(eq, 0);
  ASSERT_NE(e, nullptr);
  prm::CRef<prm::eqe> v(e);
  EXPECT_EQ(v.get(prm::eqe::type), prm::to_u8(EventType::CMD));
  EXPECT_EQ(v.at(prm::eqe::cmd).get(prm::eqe_cmd::vector), 1u << 3);
  EXPECT_EQ(pci_.take_msix(3), 0u);

  // Consume it and arm: the next completion (slot 31) interrupts once.
  doorbell(eq, 1, true);
  ASSERT_TRUE(host_->exec(make_cmd(Opcode::NOP), 16, 31).done);
  e = wait_eqe(eq, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(prm::CRef<prm::eqe>(e).at(prm::eqe::cmd).get(prm::eqe_cmd::vector), 1u << 31);
  EXPECT_EQ(msix_after(3, 2000), 1u);

  // Not re-armed (ci update only): no interrupt for the next one.
  doorbell(eq, 2, false);
  ASSERT_TRUE(host_->exec(make_cmd(Opcode::NOP), 16, 5).done);
  ASSERT_NE(wait_eqe(eq, 2), nullptr);
  EXPECT_EQ(msix_after(3, 50), 0u);

  // Arming while an EQE is pending past ci interrupts at once.
  doorbell(eq, 2, true);
  EXPECT_EQ(msix_after(3, 2000), 1u);
}

TEST_F(FwEq, ConcurrentCompletionsReportTheirSlots) {
  Eq eq;
  ASSERT_EQ(create(6, {EventType::CMD}, 1, &eq).status(), 0);
  uint32_t mask = 0;
  for (unsigned s = 0; s < 8; ++s) {
    host_->prepare(s, make_cmd(Opcode::NOP), 16);
    mask |= 1u << s;
  }
  host_->ring(mask);
  for (unsigned s = 0; s < 8; ++s) ASSERT_TRUE(host_->wait(s).done);
  uint32_t seen = 0;
  for (uint32_t ci = 0; seen != mask; ++ci) {
    const std::byte* e = wait_eqe(eq, ci);
    ASSERT_NE(e, nullptr) << "missing completions: " << std::hex << (mask & ~seen);
    const uint32_t vec =
        static_cast<uint32_t>(prm::CRef<prm::eqe>(e).at(prm::eqe::cmd).get(prm::eqe_cmd::vector));
    EXPECT_EQ(vec & seen, 0u);  // each slot reported once
    seen |= vec;
  }
  EXPECT_EQ(seen, mask);
}

TEST_F(FwEq, PageRequestEqeAndRegularDemand) {
  Eq eq;
  ASSERT_EQ(create(4, {EventType::PAGE_REQUEST}, 2, &eq).status(), 0);
  fw_->request_pages(5);
  const std::byte* e = wait_eqe(eq, 0);
  ASSERT_NE(e, nullptr);
  prm::CRef<prm::eqe> v(e);
  EXPECT_EQ(v.get(prm::eqe::type), prm::to_u8(EventType::PAGE_REQUEST));
  EXPECT_EQ(v.at(prm::eqe::req_pages).get(prm::eqe_page_req::num_pages), 5u);
  EXPECT_EQ(v.at(prm::eqe::req_pages).get(prm::eqe_page_req::function_id), 0u);
  EXPECT_EQ(query_pages(prm::QueryPagesOpMod::REGULAR_PAGES), 5);
  ASSERT_EQ(give(fresh_pages(5)).status(), 0);
  EXPECT_EQ(query_pages(prm::QueryPagesOpMod::REGULAR_PAGES), 0);
  // Negative: the firmware offers pages back.
  fw_->request_pages(-3);
  e = wait_eqe(eq, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(static_cast<int32_t>(
                prm::CRef<prm::eqe>(e).at(prm::eqe::req_pages).get(prm::eqe_page_req::num_pages)),
            -3);
  EXPECT_EQ(query_pages(prm::QueryPagesOpMod::REGULAR_PAGES), -3);
}

TEST_F(FwEq, QueryDestroyAndUarInUse) {
  Eq eq;
  ASSERT_EQ(create(5, {EventType::CMD}, 4, &eq).status(), 0);
  auto q = make_cmd(Opcode::QUERY_EQ);
  prm::Ref<prm::query_eq_in>(q.data()).set(prm::query_eq_in::eq_number, eq.eqn);
  test::Reply r = host_->exec(q, 272 + 8);
  ASSERT_EQ(r.status(), 0);
  prm::CRef<prm::query_eq_out> o(r.out.data());
  auto ec = o.at(prm::query_eq_out::eq_context_entry);
  EXPECT_EQ(ec.get(prm::eqc::log_eq_size), 5u);
  EXPECT_EQ(ec.get(prm::eqc::uar_page), uar_);
  EXPECT_EQ(ec.get(prm::eqc::intr), 4u);
  // Nothing was written yet: CREATE_EQ completed before the EQ existed and
  // QUERY_EQ's own EQE follows its execution.
  EXPECT_EQ(ec.get(prm::eqc::producer_counter), 0u);
  EXPECT_EQ(o.get(prm::query_eq_out::pas, 0), eq.buf);
  EXPECT_EQ(o.get(prm::query_eq_out::event_bitmask), prm::event_bit(EventType::CMD));

  auto d = make_cmd(Opcode::DEALLOC_UAR);
  prm::Ref<prm::dealloc_uar_in>(d.data()).set(prm::dealloc_uar_in::uar, uar_);
  EXPECT_EQ(host_->exec(d, 16).syndrome(), synd::kUarInUse);

  auto x = make_cmd(Opcode::DESTROY_EQ);
  prm::Ref<prm::destroy_eq_in>(x.data()).set(prm::destroy_eq_in::eq_number, eq.eqn);
  EXPECT_EQ(host_->exec(x, 16).status(), 0);
  test::Reply again = host_->exec(x, 16);
  EXPECT_EQ(again.status(), static_cast<uint8_t>(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(again.syndrome(), synd::kDestroyEqUnknown);
  EXPECT_EQ(host_->exec(d, 16).status(), 0);
}

TEST_F(FwEq, CreateRefusesUnmappedBufferAndUnknownUar) {
  test::Reply r = create(4, {EventType::CMD}, 0, nullptr, 0x7000000000ull);
  EXPECT_EQ(r.status(), static_cast<uint8_t>(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(r.syndrome(), synd::kEqPasNotMapped);
  uar_ = 100;  // never allocated
  r = create(4, {EventType::CMD}, 0, nullptr);
  EXPECT_EQ(r.syndrome(), synd::kEqUarNotAllocated);
}

TEST_F(FwEq, GenEqeWritesTheGivenEvent) {
  Eq eq;
  ASSERT_EQ(create(3, {EventType::PORT_CHANGE}, 0, &eq).status(), 0);
  auto in = make_cmd(Opcode::GEN_EQE, 0, 80);
  prm::Ref<prm::gen_eqe_in> g(in.data());
  g.set(prm::gen_eqe_in::eq_number, eq.eqn);
  prm::Ref<prm::eqe> e(g.bytes(prm::gen_eqe_in::eqe).data());
  e.set(prm::eqe::type, prm::to_u8(EventType::PORT_CHANGE));
  e.set(prm::eqe::sub_type, static_cast<uint8_t>(prm::PortChangeSubtype::ACTIVE));
  e.at(prm::eqe::port).set(prm::eqe_port_state::port_num, 1);
  ASSERT_EQ(host_->exec(in, 16).status(), 0);
  const std::byte* got = wait_eqe(eq, 0);
  ASSERT_NE(got, nullptr);
  prm::CRef<prm::eqe> v(got);
  EXPECT_EQ(v.get(prm::eqe::type), prm::to_u8(EventType::PORT_CHANGE));
  EXPECT_EQ(v.get(prm::eqe::sub_type), static_cast<uint8_t>(prm::PortChangeSubtype::ACTIVE));
  EXPECT_EQ(v.at(prm::eqe::port).get(prm::eqe_port_state::port_num), 1u);
  g.set(prm::gen_eqe_in::eq_number, eq.eqn + 1);
  test::Reply r = host_->exec(in, 16);
  EXPECT_EQ(r.status(), static_cast<uint8_t>(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(r.syndrome(), synd::kGenEqeUnknown);
}

TEST_F(FwEq, FullEqDropsAndCountsOverrun) {
  Eq eq;
  ASSERT_EQ(create(1, {EventType::CMD}, 0, &eq).status(), 0);  // 2 entries
  for (unsigned s = 0; s < 3; ++s) ASSERT_TRUE(host_->exec(make_cmd(Opcode::NOP), 16, s).done);
  // The third completion found the EQ full (ci never advanced).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fw_->context().eqs().overruns() == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  EXPECT_EQ(fw_->context().eqs().overruns(), 1u);
}

}  // namespace
}  // namespace kbv::sim::fw
