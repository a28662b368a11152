// SPDX-License-Identifier: BSD-3-Clause
// Golden tests of the command queue entry and mailbox block layouts
// (device.h mlx5_cmd_layout / mlx5_cmd_prot_block; mlx5_ifc.h
// cmd_queue_entry_bits / cmd_if_box_bits).
#include "hca/prm/cmdq.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <array>

#include "hca/prm/opcodes.hpp"

namespace kbv::prm {
namespace {

using golden::u8;

// cmd_layout bytes (device.h): type @0, inlen @4 (be32), in_ptr @8 (be64),
// in[16] @0x10, out[16] @0x20, out_ptr @0x30, outlen @0x38, token @0x3c,
// sig @0x3d, status_own @0x3f (delivery status 7:1, ownership bit 0).
TEST(PrmCmdq, EntryEncodeGolden) {
  std::array<std::byte, kCmdEntryBytes> b{};
  Ref<cmd_layout> e(b.data());
  e.set(cmd_layout::type, kCmdTypePcie);
  e.set(cmd_layout::inlen, 0x210);
  e.set(cmd_layout::in_ptr, 0x0000001122334400ull);
  e.set(cmd_layout::out_ptr, 0x00000055667788C0ull);
  e.set(cmd_layout::outlen, 0x10);
  e.set(cmd_layout::token, 0xA5);
  e.set(cmd_layout::ownership, kCmdOwnerHw);
  const std::array<std::byte, 4> in0 = {std::byte{0x04}, std::byte{0x00}, std::byte{0},
                                        std::byte{0}};  // CREATE_CQ opcode
  e.set_bytes(cmd_layout::in, in0);
  EXPECT_EQ(u8(b, 0x00), 0x07);
  EXPECT_EQ(u8(b, 0x06), 0x02);
  EXPECT_EQ(u8(b, 0x07), 0x10);
  EXPECT_EQ(u8(b, 0x0b), 0x11);
  EXPECT_EQ(u8(b, 0x0f), 0x00);
  EXPECT_EQ(u8(b, 0x0e), 0x44);
  EXPECT_EQ(u8(b, 0x10), 0x04);
  EXPECT_EQ(u8(b, 0x33), 0x55);  // out_ptr bytes 0x30..0x37, 0x33 = bits 39:32
  EXPECT_EQ(u8(b, 0x37), 0xC0);
  EXPECT_EQ(u8(b, 0x3b), 0x10);
  EXPECT_EQ(u8(b, 0x3c), 0xA5);
  EXPECT_EQ(u8(b, 0x3f), 0x01);
  // Firmware completes: status (delivery) in bits 7:1, ownership back to 0.
  e.set(cmd_layout::status, static_cast<uint8_t>(DeliveryStatus::TOK_ERR));
  e.set(cmd_layout::ownership, kCmdOwnerSw);
  EXPECT_EQ(u8(b, 0x3f), 0x04);
  EXPECT_EQ(delivery_status_of(u8(b, 0x3f)), 0x2);
}

TEST(PrmCmdq, EntryDecodeGolden) {
  std::array<std::byte, kCmdEntryBytes> b{};
  b[0x20] = std::byte{0x00};  // out[0] = mbox_out.status
  b[0x21] = std::byte{0x00};
  b[0x24] = std::byte{0xDE};  // out[4..7] = syndrome
  b[0x3f] = std::byte{0x13};  // delivery status 9 (RES_FLD_NOT_CLR_ERR), owner 1
  b[0x3d] = std::byte{0x5A};
  CRef<cmd_layout> e(b.data());
  EXPECT_EQ(e.get(cmd_layout::status), 0x9u);
  EXPECT_EQ(e.get(cmd_layout::ownership), 1u);
  EXPECT_EQ(e.get(cmd_layout::status_own), 0x13u);
  EXPECT_EQ(e.get(cmd_layout::sig), 0x5Au);
  EXPECT_EQ(static_cast<uint8_t>(e.bytes(cmd_layout::out)[4]), 0xDE);
}

// Mailbox block (device.h mlx5_cmd_prot_block): data[512] @0, next @0x230 (be64),
// block_num @0x238 (be32), token @0x23d, ctrl_sig @0x23e, sig @0x23f.
TEST(PrmCmdq, MailboxGolden) {
  std::array<std::byte, kMailboxBlockBytes> b{};
  Ref<cmd_prot_block> m(b.data());
  m.set(cmd_prot_block::next, 0x0000000123456400ull);
  m.set(cmd_prot_block::block_num, 3);
  m.set(cmd_prot_block::token, 0x77);
  m.set(cmd_prot_block::ctrl_sig, 0xC1);
  m.set(cmd_prot_block::sig, 0x5E);
  m.bytes(cmd_prot_block::data)[511] = std::byte{0xEE};
  EXPECT_EQ(u8(b, 0x233), 0x01);
  EXPECT_EQ(u8(b, 0x234), 0x23);
  EXPECT_EQ(u8(b, 0x237), 0x00);
  EXPECT_EQ(u8(b, 0x236), 0x64);
  EXPECT_EQ(u8(b, 0x23b), 0x03);
  EXPECT_EQ(u8(b, 0x23d), 0x77);
  EXPECT_EQ(u8(b, 0x23e), 0xC1);
  EXPECT_EQ(u8(b, 0x23f), 0x5E);
  EXPECT_EQ(u8(b, 0x1ff), 0xEE);
  CRef<cmd_prot_block> c(b.data());
  EXPECT_EQ(c.get(cmd_prot_block::next), 0x0000000123456400ull);
  EXPECT_EQ(c.get(cmd_prot_block::block_num), 3u);
}

TEST(PrmCmdq, Constants) {
  EXPECT_EQ(kCmdEntryBytes, 64u);
  EXPECT_EQ(kMailboxBlockBytes, 576u);
  EXPECT_EQ(kMailboxDataBytes, 512u);
  EXPECT_EQ(kCmdTypePcie, 7u);
  EXPECT_EQ(mailbox_blocks(0), 0u);
  EXPECT_EQ(mailbox_blocks(16), 0u);
  EXPECT_EQ(mailbox_blocks(17), 1u);
  EXPECT_EQ(mailbox_blocks(16 + 512), 1u);
  EXPECT_EQ(mailbox_blocks(16 + 513), 2u);
  EXPECT_EQ(mailbox_blocks(0x1010), 8u);  // 16 + 8 * 512
}

}  // namespace
}  // namespace kbv::prm
