// SPDX-License-Identifier: BSD-3-Clause
//
// Test doubles for the model firmware's unit tests: a memory-backed PCI
// function (BAR0 as a buffer, MSI-X vectors as eventfds, a write trap that
// calls the firmware's handler as the platform's MMIO accessors do) and a
// table IOMMU over test buffers; plus a tiny "driver" that writes command
// queue entries and mailboxes by hand with the prm tables (no src/hca code).
//
// Threading: the doubles are thread-safe where the interfaces require it;
// a TestHost is used from the test thread only.
#pragma once

#include "hca/prm/cmd_hdr.hpp"
#include "hca/prm/cmdq.hpp"
#include "hca/prm/init_seg.hpp"
#include "sim/bus/iommu.hpp"
#include "sim/bus/pci_function.hpp"
#include "sim/fw/firmware.hpp"

#include "hca/prm/boot.hpp"
#include "hca/prm/hca_cap.hpp"

#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kbv::sim::fw::test {

// IOVA -> host mappings with permissions; faults are counted.
class TestIommu final : public Iommu {
 public:
  Status map(uint64_t iova, void* vaddr, uint64_t size, uint32_t perm) override {
    std::lock_guard lock(mu_);
    maps_[iova] = {static_cast<std::byte*>(vaddr), size, perm};
    return Status::ok();
  }
  Status unmap(uint64_t iova, uint64_t size, uint64_t* unmapped) override {
    std::lock_guard lock(mu_);
    uint64_t n = 0;
    for (auto it = maps_.begin(); it != maps_.end();) {
      if (it->first >= iova && it->first + it->second.size <= iova + size) {
        n += it->second.size;
        it = maps_.erase(it);
      } else {
        ++it;
      }
    }
    if (unmapped) *unmapped = n;
    return Status::ok();
  }
  Status dma_read(uint64_t iova, std::span<std::byte> dst) override {
    std::byte* p = translate(iova, dst.size(), kRead);
    if (!p) return KBV_ERR_IOMMU_FAULT;
    dma_copy_from_host(dst.data(), p, dst.size());
    return Status::ok();
  }
  Status dma_write(uint64_t iova, std::span<const std::byte> src) override {
    std::byte* p = translate(iova, src.size(), kWrite);
    if (!p) return KBV_ERR_IOMMU_FAULT;
    dma_copy_to_host(p, src.data(), src.size());
    return Status::ok();
  }
  std::byte* translate(uint64_t iova, uint64_t len, uint32_t perm) override {
    std::lock_guard lock(mu_);
    auto it = maps_.upper_bound(iova);
    if (it != maps_.begin()) {
      --it;
      const Map& m = it->second;
      if (iova >= it->first && iova + len <= it->first + m.size && (m.perm & perm) == perm)
        return m.host + (iova - it->first);
    }
    faults_.fetch_add(1);
    return nullptr;
  }
  uint64_t fault_count() const override { return faults_.load(); }

 private:
  struct Map {
    std::byte* host;
    uint64_t size;
    uint32_t perm;
  };
  std::mutex mu_;
  std::map<uint64_t, Map> maps_;
  std::atomic<uint64_t> faults_{0};
};

// A memory-backed PCI function: 1 MiB BAR0 whose init segment says 32 slots
// of 64 B, MSI-X vectors backed by eventfds.
class TestPci final : public PciFunction {
 public:
  static constexpr std::size_t kBarBytes = 1u << 20;
  static constexpr unsigned kVectors = 8;

  TestPci() : bar_(static_cast<std::byte*>(std::aligned_alloc(4096, kBarBytes))) {
    std::memset(bar_, 0, kBarBytes);
    store_be32(prm::init_seg::kCmdqAddrLSzOff, 5u << 4 | 6u);
    for (unsigned v = 0; v < kVectors; ++v) msix_fd_[v] = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~TestPci() override {
    for (int fd : msix_fd_) ::close(fd);
    std::free(bar_);
  }

  std::span<std::byte> bar0() override { return {bar_, kBarBytes}; }
  Iommu& iommu() override { return iommu_; }
  TestIommu& test_iommu() { return iommu_; }
  bool raise_msix(unsigned v) override {
    if (v >= kVectors) return false;
    const uint64_t one = 1;
    return ::write(msix_fd_[v], &one, sizeof one) == sizeof one;
  }
  bool bus_master() const override { return true; }
  void set_bar0_write_handler(WriteHandler h) override {
    std::lock_guard lock(mu_);
    handler_ = std::move(h);
  }
  void set_reset_handler(std::function<void()> h) override {
    std::lock_guard lock(mu_);
    reset_ = std::move(h);
  }

  // Driver store into BAR0 through the trap (as platform mmio.hpp does on the model).
  void write32(uint32_t off, uint32_t v, bool trapped = true) {
    store_be32(off, v);
    WriteHandler h;
    {
      std::lock_guard lock(mu_);
      h = handler_;
    }
    if (trapped && h) h(off, v, 4);
  }
  // Single 4-byte accesses, as the driver's MMIO accessors (the firmware
  // thread reads BAR0 concurrently).
  uint32_t read32(uint32_t off) const {
    return __builtin_bswap32(
        __atomic_load_n(reinterpret_cast<const uint32_t*>(bar_ + off), __ATOMIC_RELAXED));
  }
  void store_be32(uint32_t off, uint32_t v) {
    __atomic_store_n(reinterpret_cast<uint32_t*>(bar_ + off), __builtin_bswap32(v),
                     __ATOMIC_RELAXED);
  }
  // Number of MSI-X interrupts on vector v since the last call (drains the eventfd).
  uint64_t take_msix(unsigned v) {
    uint64_t n = 0;
    if (::read(msix_fd_[v], &n, sizeof n) != sizeof n) return 0;
    return n;
  }
  void reset() {
    store_be32(prm::init_seg::kCmdqAddrHOff, 0);
    store_be32(prm::init_seg::kCmdqAddrLSzOff, 5u << 4 | 6u);
    std::function<void()> r;
    {
      std::lock_guard lock(mu_);
      r = reset_;
    }
    if (r) r();
  }

 private:
  std::byte* bar_;
  TestIommu iommu_;
  int msix_fd_[kVectors];
  std::mutex mu_;
  WriteHandler handler_;
  std::function<void()> reset_;
};

// DMA memory for the test driver: one buffer mapped at kIovaBase.
class DmaArena {
 public:
  static constexpr uint64_t kIovaBase = 0x10000000;
  static constexpr std::size_t kBytes = 8u << 20;

  explicit DmaArena(TestIommu& mmu)
      : mem_(static_cast<std::byte*>(std::aligned_alloc(4096, kBytes))) {
    std::memset(mem_, 0, kBytes);
    (void)mmu.map(kIovaBase, mem_, kBytes, Iommu::kRead | Iommu::kWrite);
  }
  ~DmaArena() { std::free(mem_); }

  // A zeroed chunk of `size` bytes aligned to `align`.
  uint64_t alloc(std::size_t size, std::size_t align = 4096) {
    next_ = (next_ + align - 1) / align * align;
    const uint64_t iova = kIovaBase + next_;
    next_ += size;
    return iova;
  }
  std::byte* host(uint64_t iova) { return mem_ + (iova - kIovaBase); }

 private:
  std::byte* mem_;
  std::size_t next_ = 0;
};

// A command image: the bytes of the input, with header helpers.
inline std::vector<std::byte> make_cmd(uint16_t opcode, uint16_t op_mod, std::size_t len = 16) {
  std::vector<std::byte> in(len);
  prm::Ref<prm::mbox_in> h(in.data());
  h.set(prm::mbox_in::opcode, opcode);
  h.set(prm::mbox_in::op_mod, op_mod);
  return in;
}
inline std::vector<std::byte> make_cmd(prm::Opcode op, uint16_t op_mod = 0, std::size_t len = 16) {
  return make_cmd(prm::to_u16(op), op_mod, len);
}

// Result of one command as the driver sees it.
struct Reply {
  bool done = false;           // ownership returned to software
  uint8_t delivery = 0;        // status_own bits 7:1
  std::vector<std::byte> out;  // outlen bytes (inline + mailboxes)
  uint8_t status() const { return out.empty() ? 0xFF : static_cast<uint8_t>(out[0]); }
  uint32_t syndrome() const {
    return out.size() < 8 ? 0
                          : static_cast<uint32_t>(
                                prm::CRef<prm::mbox_out>(out.data()).get(prm::mbox_out::syndrome));
  }
};

// The test's driver: a command queue page, per-slot mailbox chains, posting
// and polling.
class TestHost {
 public:
  static constexpr unsigned kSlots = 32;

  explicit TestHost(TestPci& pci) : pci_(pci), dma_(pci.test_iommu()) {
    cmdq_ = dma_.alloc(4096);
    pci_.write32(prm::init_seg::kCmdqAddrHOff, static_cast<uint32_t>(cmdq_ >> 32));
    pci_.write32(prm::init_seg::kCmdqAddrLSzOff, static_cast<uint32_t>(cmdq_));
  }
  DmaArena& dma() { return dma_; }
  uint64_t cmdq() const { return cmdq_; }
  std::byte* entry(unsigned slot) { return dma_.host(cmdq_ + slot * prm::kCmdEntryBytes); }

  // Builds a mailbox chain for `len` bytes of message (beyond the inline 16),
  // 1 KiB aligned blocks, and copies `data` (may be shorter) into it.
  uint64_t build_chain(std::size_t len, std::span<const std::byte> data, uint8_t token,
                       std::vector<uint64_t>* blocks = nullptr) {
    if (blocks) blocks->clear();
    const uint32_t n = prm::mailbox_blocks(static_cast<uint32_t>(len));
    if (n == 0) return 0;
    std::vector<uint64_t> iovas(n);
    for (uint32_t i = 0; i < n; ++i) iovas[i] = dma_.alloc(prm::kMailboxBlockBytes, 1024);
    for (uint32_t i = 0; i < n; ++i) {
      prm::Ref<prm::cmd_prot_block> b(dma_.host(iovas[i]));
      b.set(prm::cmd_prot_block::block_num, i);
      b.set(prm::cmd_prot_block::token, token);
      b.set(prm::cmd_prot_block::next, i + 1 < n ? iovas[i + 1] : 0);
      const std::size_t off = 16 + std::size_t{i} * prm::kMailboxDataBytes;
      if (off < data.size())
        std::memcpy(b.data(), data.data() + off,
                    std::min<std::size_t>(prm::kMailboxDataBytes, data.size() - off));
    }
    if (blocks) *blocks = iovas;
    return iovas[0];
  }

  // Fill slot `slot` with `in` and an output of outlen bytes; ownership set.
  // Does not ring.
  // hand_over = false leaves the ownership bit clear (the entry stays
  // software's), with no moment in which a firmware scan could see it owned.
  void prepare(unsigned slot, std::span<const std::byte> in, uint32_t outlen, uint8_t token = 0x5a,
               bool hand_over = true) {
    // As the driver (src/hca/cmdq): plain stores stay off status_own (the
    // firmware's scan reads it at any time), which is written alone.
    std::byte* e = entry(slot);
    std::memset(e, 0, prm::kCmdEntryBytes - 1);
    set_status_own(slot, 0);
    prm::Ref<prm::cmd_layout> c(e);
    c.set(prm::cmd_layout::type, prm::kCmdTypePcie);
    c.set(prm::cmd_layout::inlen, in.size());
    c.set(prm::cmd_layout::outlen, outlen);
    e[prm::cmd_layout::token.off / 8] = std::byte{token};
    c.set_bytes(prm::cmd_layout::in, in.first(std::min<std::size_t>(16, in.size())));
    c.set(prm::cmd_layout::in_ptr, build_chain(in.size(), in, token, &in_blocks_[slot]));
    c.set(prm::cmd_layout::out_ptr, build_chain(outlen, {}, token, &out_blocks_[slot]));
    outlen_[slot] = outlen;
    if (hand_over) set_status_own(slot, prm::kCmdOwnerHw);
  }
  void set_status_own(unsigned slot, uint8_t v) {
    std::atomic_ref<uint8_t>(*reinterpret_cast<uint8_t*>(entry(slot) + 0x3F))
        .store(v, std::memory_order_release);
  }
  void ring(uint32_t mask, bool trapped = true) {
    pci_.write32(prm::init_seg::kCmdDbellOff, mask, trapped);
  }
  uint8_t status_own(unsigned slot) {
    return std::atomic_ref<uint8_t>(*reinterpret_cast<uint8_t*>(entry(slot) + 0x3F))
        .load(std::memory_order_acquire);
  }
  bool owned_by_hw(unsigned slot) { return (status_own(slot) & 1) != 0; }

  // Waits (bounded: 10 s) until the slot is back with software.
  Reply wait(unsigned slot) {
    Reply r;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (owned_by_hw(slot)) {
      if (std::chrono::steady_clock::now() > until) return r;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    r.done = true;
    const uint8_t so = status_own(slot);
    r.delivery = so >> 1;
    r.out = read_output(slot);
    return r;
  }
  std::vector<std::byte> read_output(unsigned slot) {
    std::vector<std::byte> out(outlen_[slot]);
    prm::CRef<prm::cmd_layout> c(entry(slot));
    auto inl = c.bytes(prm::cmd_layout::out);
    std::memcpy(out.data(), inl.data(), std::min<std::size_t>(16, out.size()));
    for (std::size_t i = 0; i < out_blocks_[slot].size(); ++i) {
      const std::size_t off = 16 + i * prm::kMailboxDataBytes;
      std::memcpy(out.data() + off, dma_.host(out_blocks_[slot][i]),
                  std::min<std::size_t>(prm::kMailboxDataBytes, out.size() - off));
    }
    return out;
  }
  // Post on `slot`, ring, wait.
  Reply exec(std::span<const std::byte> in, uint32_t outlen, unsigned slot = 0) {
    prepare(slot, in, outlen);
    ring(1u << slot);
    return wait(slot);
  }
  std::vector<uint64_t>& in_blocks(unsigned slot) { return in_blocks_[slot]; }
  std::vector<uint64_t>& out_blocks(unsigned slot) { return out_blocks_[slot]; }

 private:
  TestPci& pci_;
  DmaArena dma_;
  uint64_t cmdq_ = 0;
  uint32_t outlen_[kSlots] = {};
  std::vector<uint64_t> in_blocks_[kSlots];
  std::vector<uint64_t> out_blocks_[kSlots];
};

// A firmware with test timing: no latency, fast scan off unless asked.
inline FwConfig test_config() {
  FwConfig c;
  c.cmd_latency = std::chrono::nanoseconds(0);
  c.scan_interval = std::chrono::nanoseconds(0);
  c.trace_from_env = true;
  return c;
}

inline uint16_t u16(auto v) { return static_cast<uint16_t>(v); }
using prm::Opcode;

// A started firmware (bring-up page demands 4 + 6) and a test driver, with
// the PRM bring-up sequence as a helper.
class FwFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    FwConfig cfg = test_config();
    cfg.boot_pages = 4;
    cfg.init_pages = 6;
    fw_ = std::make_unique<Firmware>(pci_, cfg);
    ASSERT_TRUE(fw_->start().is_ok());
    host_ = std::make_unique<TestHost>(pci_);
  }

  Reply run(Opcode op, uint16_t op_mod, std::size_t inlen, uint32_t outlen) {
    return host_->exec(make_cmd(op, op_mod, inlen), outlen);
  }
  int32_t query_pages(prm::QueryPagesOpMod m) {
    Reply r = run(Opcode::QUERY_PAGES, u16(m), 16, 16);
    EXPECT_EQ(r.status(), 0);
    return static_cast<int32_t>(
        prm::CRef<prm::query_pages_out>(r.out.data()).get(prm::query_pages_out::num_pages));
  }
  // MANAGE_PAGES give of the given page IOVAs.
  Reply give(const std::vector<uint64_t>& pages) {
    auto in = make_cmd(Opcode::MANAGE_PAGES, u16(prm::ManagePagesOpMod::ALLOCATION_SUCCESS),
                       16 + 8 * pages.size());
    prm::Ref<prm::manage_pages_in> m(in.data());
    m.set(prm::manage_pages_in::input_num_entries, pages.size());
    for (uint32_t i = 0; i < pages.size(); ++i) m.set(prm::manage_pages_in::pas, i, pages[i]);
    return host_->exec(in, 16);
  }
  std::vector<uint64_t> fresh_pages(int32_t n) {
    std::vector<uint64_t> p;
    for (int32_t i = 0; i < n; ++i) p.push_back(host_->dma().alloc(4096));
    return p;
  }
  // ENABLE_HCA .. INIT_HCA as docs/PRM.md lists it.
  void bring_up() {
    ASSERT_EQ(run(Opcode::ENABLE_HCA, 0, 16, 12).status(), 0);
    Reply issi = run(Opcode::QUERY_ISSI, 0, 16, 112);
    ASSERT_EQ(issi.status(), 0);
    prm::CRef<prm::query_issi_out> qi(issi.out.data());
    EXPECT_EQ(qi.get(prm::query_issi_out::current_issi), 0u);
    EXPECT_EQ(qi.get(prm::query_issi_out::supported_issi_dw0), 0x3u);
    auto si = make_cmd(Opcode::SET_ISSI);
    prm::Ref<prm::set_issi_in>(si.data()).set(prm::set_issi_in::current_issi, 1);
    ASSERT_EQ(host_->exec(si, 16).status(), 0);

    const int32_t boot = query_pages(prm::QueryPagesOpMod::BOOT_PAGES);
    EXPECT_EQ(boot, 4);
    ASSERT_EQ(give(fresh_pages(boot)).status(), 0);

    auto he = make_cmd(Opcode::ACCESS_REG, u16(prm::AccessRegOpMod::WRITE), 32);
    prm::Ref<prm::access_register_in>(he.data()).set(prm::access_register_in::register_id,
                                                     u16(prm::RegId::HOST_ENDIANNESS));
    ASSERT_EQ(host_->exec(he, 32).status(), 0);

    Reply cap = run(Opcode::QUERY_HCA_CAP,
                    prm::hca_cap_op_mod(prm::CapType::GENERAL, prm::CapMode::CUR), 16, 4112);
    ASSERT_EQ(cap.status(), 0);
    auto set = make_cmd(Opcode::SET_HCA_CAP, prm::set_hca_cap_op_mod(prm::CapType::GENERAL), 4112);
    std::memcpy(set.data() + 16, cap.out.data() + 16, 4096);
    prm::Ref<prm::cmd_hca_cap>(set.data() + 16).set(prm::cmd_hca_cap::cmdif_checksum, 0);
    ASSERT_EQ(host_->exec(set, 16).status(), 0);

    const int32_t init = query_pages(prm::QueryPagesOpMod::INIT_PAGES);
    EXPECT_EQ(init, 6);
    ASSERT_EQ(give(fresh_pages(init)).status(), 0);
    ASSERT_EQ(run(Opcode::INIT_HCA, 0, 32, 16).status(), 0);
  }

  TestPci pci_;
  std::unique_ptr<Firmware> fw_;
  std::unique_ptr<TestHost> host_;
};

}  // namespace kbv::sim::fw::test
