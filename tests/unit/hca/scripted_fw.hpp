// SPDX-License-Identifier: BSD-3-Clause
// A scripted firmware for bring-up / teardown tests: answers every posted
// command by opcode with a plausible output, keeps the pages it was given,
// creates "EQs" from CREATE_EQ inputs and writes command-completion EQEs to
// the EQ that subscribed to them. Byte offsets are written out from
// mlx5_ifc.h here, independently of src/hca/prm.
#pragma once

#include <functional>
#include <map>
#include <set>

#include "cmd_harness.hpp"

namespace kbv::hca::test {

class ScriptedFw {
 public:
  struct Cmd {
    uint16_t opcode;
    uint16_t op_mod;
    uint32_t slot;
  };
  struct Eq {
    std::byte* buf;
    uint32_t nent;
    uint32_t pi = 0;
    uint64_t mask;
  };

  ScriptedFw(FakeDevice& dev, FakeFw& fw) : dev_(dev), fw_(fw) {}

  // Answers every command posted so far (except held opcodes). Returns the
  // number answered.
  uint32_t run() {
    uint32_t n = 0;
    for (uint32_t s : fw_.rung()) pending_.push_back(s);
    std::vector<uint32_t> keep;
    for (uint32_t s : pending_) {
      const uint16_t op = fw_.opcode(s);
      if (hold.count(op)) {
        keep.push_back(s);
        continue;
      }
      answer(s);
      ++n;
    }
    pending_ = keep;
    return n;
  }

  // Writes an EQE of `type` to the EQ subscribed to it.
  bool post_eqe(uint8_t type, const std::function<void(std::byte* eqe)>& fill) {
    for (auto& [eqn, eq] : eqs) {
      if (!(eq.mask >> type & 1)) continue;
      std::byte* e = eq.buf + size_t{eq.pi & (eq.nent - 1)} * 64;
      std::memset(e, 0, 63);
      e[1] = std::byte{type};
      fill(e);
      e[63] = std::byte{static_cast<uint8_t>((eq.pi & eq.nent) ? 1 : 0)};
      ++eq.pi;
      return true;
    }
    return false;
  }

  std::vector<uint16_t> opcodes() const {
    std::vector<uint16_t> v;
    for (const Cmd& c : log) v.push_back(c.opcode);
    return v;
  }

  // ---- script
  int32_t boot_pages = 4;
  int32_t init_pages = 6;
  bool roce = true;
  bool ethernet = false;  // cmd_hca_cap.port_type
  bool has_query_issi = true;
  uint32_t supported_issi = 0x3;
  uint16_t fail_opcode = 0;
  uint8_t fail_status = 0x3;
  uint32_t fail_syndrome = 0x1234;
  std::set<uint16_t> hold;  // posted but never answered
  bool keep_pages = false;  // MANAGE_PAGES take returns nothing

  // ---- observed state
  std::vector<Cmd> log;
  std::set<uint64_t> pages;
  std::map<uint32_t, Eq> eqs;
  std::vector<std::byte> set_caps_block;
  uint32_t uar = 7;
  uint32_t next_eqn = 5;

 private:
  static void put32(std::vector<std::byte>& v, size_t i, uint32_t x) { CmdHarness::put32(v, i, x); }
  void answer(uint32_t s) {
    auto in = fw_.input(s);
    const uint16_t op = static_cast<uint16_t>(CmdHarness::be16(in, 0));
    const uint16_t op_mod = static_cast<uint16_t>(CmdHarness::be16(in, 6));
    log.push_back({op, op_mod, s});
    std::vector<std::byte> out(fw_.outlen(s));
    if (op == fail_opcode) {
      out[0] = std::byte{fail_status};
      put32(out, 4, fail_syndrome);
    } else {
      handle(op, op_mod, in, out);
    }
    fw_.complete(s, out);
    // Command EQE after the ownership hand-back (as firmware does).
    post_eqe(0x0a, [s](std::byte* e) {
      const uint32_t v = 1u << s;
      for (int k = 0; k < 4; ++k) e[32 + k] = static_cast<std::byte>(v >> (24 - 8 * k));
    });
  }

  void handle(uint16_t op, uint16_t op_mod, const std::vector<std::byte>& in,
              std::vector<std::byte>& out) {
    switch (op) {
      case 0x10A:  // QUERY_ISSI
        if (!has_query_issi) {
          out[0] = std::byte{0x2};
          return;
        }
        put32(out, 108, supported_issi);
        return;
      case 0x107: {  // QUERY_PAGES
        const int32_t n = op_mod == 1 ? boot_pages : op_mod == 2 ? init_pages : 0;
        put32(out, 12, static_cast<uint32_t>(n));
        return;
      }
      case 0x108: {  // MANAGE_PAGES
        const uint32_t n = CmdHarness::be32(in, 12);
        if (op_mod == 1) {
          for (uint32_t i = 0; i < n; ++i) {
            const uint64_t p = CmdHarness::be64(in, 16 + 8 * i);
            EXPECT_TRUE(pages.insert(p).second) << "page given twice";
          }
        } else if (op_mod == 2) {
          uint32_t k = 0;
          while (!keep_pages && k < n && !pages.empty()) {
            const uint64_t p = *pages.begin();
            pages.erase(pages.begin());
            CmdHarness::put64(out, 16 + 8 * k, p);
            ++k;
          }
          put32(out, 8, k);
        }
        return;
      }
      case 0x100: {  // QUERY_HCA_CAP
        std::vector<std::byte> cap(4096);
        if (op_mod >> 1 == 0) {
          if (!set_caps_block.empty() && (op_mod & 1)) {
            cap = set_caps_block;
          } else {
            cap[0x13] = std::byte{0x11};                               // log_max_qp
            cap[0x36] = ethernet ? std::byte{0x01} : std::byte{0x00};  // port_type
            cap[0x37] = std::byte{1};                                  // num_ports
            cap[0x42] = std::byte{0xC0};                               // cmdif_checksum = 3
            cap[0x43] = roce ? std::byte{0x04} : std::byte{0x00};
            cap[0x65] = std::byte{0x10};  // log_max_pd
          }
        } else if (op_mod >> 1 == 4) {
          cap[0x13] = std::byte{0x04};  // RoCE v2
        }
        std::memcpy(out.data() + 16, cap.data(), 4096);
        return;
      }
      case 0x109:  // SET_HCA_CAP
        set_caps_block.assign(in.begin() + 16, in.begin() + 16 + 4096);
        return;
      case 0x802:  // ALLOC_UAR
        put32(out, 8, uar);
        return;
      case 0x301: {  // CREATE_EQ
        Eq eq;
        eq.nent = 1u << (static_cast<uint32_t>(in[16 + 12]) & 0x1f);
        eq.buf = dev_.va(CmdHarness::be64(in, 272));
        eq.mask = CmdHarness::be64(in, 88);
        const uint32_t eqn = next_eqn++;
        eqs[eqn] = eq;
        out[11] = static_cast<std::byte>(eqn);
        return;
      }
      case 0x302:  // DESTROY_EQ
        EXPECT_EQ(eqs.erase(static_cast<uint32_t>(in[11])), 1u);
        return;
      default: return;  // ENABLE/DISABLE, SET_ISSI, ACCESS_REG, INIT/TEARDOWN, DEALLOC_UAR, NOP: ok
    }
  }

  FakeDevice& dev_;
  FakeFw& fw_;
  std::vector<uint32_t> pending_;
};

}  // namespace kbv::hca::test
