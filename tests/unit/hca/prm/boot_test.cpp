// SPDX-License-Identifier: BSD-3-Clause
// Golden tests of the bring-up command layouts (mlx5_ifc.h enable_hca,
// query/set_issi, query/manage_pages, init/teardown_hca, access_register,
// register_host_endianness, query_adapter, set_driver_version).
#include "hca/prm/boot.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "hca/prm/opcodes.hpp"

namespace kbv::prm {
namespace {

using Buf = golden::Bytes;

using golden::expect_bytes;

// enable_hca_in: opcode bytes 0-1; embedded_cpu_function = MSB of byte 8;
// function_id bits 0x50..0x5f = bytes 10-11.
TEST(PrmBoot, EnableHcaGolden) {
  Buf b(enable_hca_in::kBits / 8);
  Ref<enable_hca_in> in(b.data());
  in.set(enable_hca_in::opcode, to_u16(Opcode::ENABLE_HCA));
  in.set(enable_hca_in::embedded_cpu_function, 1);
  in.set(enable_hca_in::function_id, 0x0007);
  expect_bytes(b, {0x01, 0x04, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x00, 0x07, 0, 0, 0, 0});
}

// query_issi_out: current_issi bits 0x50..0x5f = bytes 10-11; the supported
// mask is bytes 32..111 and supported_issi_dw0 its last dword (bytes 108-111).
// set_issi_in: current_issi at bytes 10-11.
TEST(PrmBoot, IssiGolden) {
  Buf out(query_issi_out::kBits / 8);
  out.put(11, 0x00);
  out.put(111, 0x03);  // ISSI 0 and 1 supported
  out.put(32, 0xAA);   // first byte of the 80-byte mask: not part of dw0
  CRef<query_issi_out> q(out.data());
  EXPECT_EQ(q.get(query_issi_out::current_issi), 0u);
  EXPECT_EQ(q.get(query_issi_out::supported_issi_dw0), 0x3u);
  EXPECT_EQ(static_cast<uint8_t>(q.bytes(query_issi_out::supported_issi)[0]), 0xAA);
  EXPECT_EQ(q.bytes(query_issi_out::supported_issi).size(), 80u);

  Buf in(set_issi_in::kBits / 8);
  Ref<set_issi_in> s(in.data());
  s.set(set_issi_in::opcode, to_u16(Opcode::SET_ISSI));
  s.set(set_issi_in::current_issi, kIssi);
  expect_bytes(in, {0x01, 0x0B, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0, 0, 0});
}

// query_pages_in: op_mod bytes 6-7. query_pages_out: num_pages bits 0x60..0x7f =
// bytes 12-15, signed. manage_pages_in: input_num_entries bytes 12-15, pas[i]
// = be64 at byte 16 + 8 i. manage_pages_out: output_num_entries bytes 8-11.
TEST(PrmBoot, PagesGolden) {
  Buf qi(query_pages_in::kBits / 8);
  Ref<query_pages_in> q(qi.data());
  q.set(query_pages_in::opcode, to_u16(Opcode::QUERY_PAGES));
  q.set(query_pages_in::op_mod, static_cast<uint16_t>(QueryPagesOpMod::INIT_PAGES));
  expect_bytes(qi, {0x01, 0x07, 0, 0, 0, 0, 0x00, 0x02});

  Buf qo(query_pages_out::kBits / 8);
  qo.put(12, 0xFF), qo.put(13, 0xFF), qo.put(14, 0xFF), qo.put(15, 0xF0);
  EXPECT_EQ(static_cast<int32_t>(CRef<query_pages_out>(qo.data()).get(query_pages_out::num_pages)),
            -16);

  Buf mi(manage_pages_len(2));
  EXPECT_EQ(mi.b.size(), 32u);
  Ref<manage_pages_in> m(mi.data());
  m.set(manage_pages_in::opcode, to_u16(Opcode::MANAGE_PAGES));
  m.set(manage_pages_in::op_mod, static_cast<uint16_t>(ManagePagesOpMod::ALLOCATION_SUCCESS));
  m.set(manage_pages_in::input_num_entries, 2);
  m.set(manage_pages_in::pas, 0, 0x0000000100000000ull);
  m.set(manage_pages_in::pas, 1, 0x00000001DEAD1000ull);
  expect_bytes(mi, {0x01, 0x08, 0, 0,    0, 0, 0x00, 0x01, 0, 0, 0, 0,    0,    0,    0,    0x02,
                    0,    0,    0, 0x01, 0, 0, 0,    0,    0, 0, 0, 0x01, 0xDE, 0xAD, 0x10, 0x00});

  Buf mo(manage_pages_len(1));
  mo.put(11, 0x01);
  mo.put(16 + 3, 0x02);
  mo.put(16 + 6, 0x30);
  CRef<manage_pages_out> o(mo.data());
  EXPECT_EQ(o.get(manage_pages_out::output_num_entries), 1u);
  EXPECT_EQ(o.get(manage_pages_out::pas, 0), 0x0000000200003000ull);
}

// init_hca_in: sw_owner_id[i] = be32 at byte 16 + 4 i; teardown_hca_in: profile
// bytes 10-11; teardown_hca_out: state = LSB of byte 15.
TEST(PrmBoot, InitTeardownGolden) {
  Buf ii(init_hca_in::kBits / 8);
  Ref<init_hca_in> i(ii.data());
  i.set(init_hca_in::opcode, to_u16(Opcode::INIT_HCA));
  i.set(init_hca_in::sw_owner_id, 3, 0x01020304);
  EXPECT_EQ(ii[1], 0x02);
  EXPECT_EQ(ii[28], 0x01);
  EXPECT_EQ(ii[31], 0x04);

  Buf ti(teardown_hca_in::kBits / 8);
  Ref<teardown_hca_in> t(ti.data());
  t.set(teardown_hca_in::opcode, to_u16(Opcode::TEARDOWN_HCA));
  t.set(teardown_hca_in::profile, static_cast<uint16_t>(TeardownProfile::FORCE_CLOSE));
  expect_bytes(ti, {0x01, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0, 0, 0});

  Buf to(teardown_hca_out::kBits / 8);
  to.put(15, 0x01);
  EXPECT_EQ(CRef<teardown_hca_out>(to.data()).get(teardown_hca_out::state), 1u);
}

// access_register_in: register_id bytes 10-11, argument bytes 12-15, then the
// register: host endianness he = MSB of register byte 0 (= byte 16).
TEST(PrmBoot, AccessRegHostEndiannessGolden) {
  Buf b(kHostEndiannessRegLen);
  EXPECT_EQ(b.b.size(), 32u);
  Ref<access_register_in> in(b.data());
  in.set(access_register_in::opcode, to_u16(Opcode::ACCESS_REG));
  in.set(access_register_in::op_mod, static_cast<uint16_t>(AccessRegOpMod::WRITE));
  in.set(access_register_in::register_id, static_cast<uint16_t>(RegId::HOST_ENDIANNESS));
  in.set(access_register_in::argument, 0xA5A5A5A5);
  Ref<register_host_endianness> he(b.data() + access_register_in::register_data.byte_off(0));
  he.set(register_host_endianness::he, 1);
  expect_bytes(b, {0x08, 0x05, 0,    0,    0,    0,    0x00, 0x00, 0, 0,
                   0x70, 0x04, 0xA5, 0xA5, 0xA5, 0xA5, 0x80, 0,    0, 0});
}

// query_adapter_out: the param block at byte 16; inside it ieee_vendor_id =
// low 24 bits of the dword at byte 24, vsd_vendor_id bytes 30-31, vsd at byte
// 32, PSID (vsd_contd_psid) at byte 240.
TEST(PrmBoot, QueryAdapterDecodeGolden) {
  Buf b(query_adapter_out::kBits / 8);
  const std::size_t p = 16;
  b.put(p + 24, 0xEE);  // not part of the vendor id
  b.put(p + 25, 0x00), b.put(p + 26, 0x02), b.put(p + 27, 0xC9);
  b.put(p + 30, 0x15), b.put(p + 31, 0xB3);
  const char psid[] = "MT_0000000008";
  std::memcpy(b.data() + p + 240, psid, sizeof psid - 1);
  CRef<query_adapter_param_block> a =
      CRef<query_adapter_out>(b.data()).at(query_adapter_out::query_adapter_struct);
  EXPECT_EQ(a.get(query_adapter_param_block::ieee_vendor_id), 0x0002C9u);
  EXPECT_EQ(a.get(query_adapter_param_block::vsd_vendor_id), 0x15B3u);
  auto got = a.bytes(query_adapter_param_block::vsd_contd_psid);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(got.data()), sizeof psid - 1),
            std::string_view(psid));
}

// set_driver_version_in: the string at byte 16 (64 bytes).
TEST(PrmBoot, SetDriverVersionGolden) {
  Buf b(set_driver_version_in::kBits / 8);
  Ref<set_driver_version_in> in(b.data());
  in.set(set_driver_version_in::opcode, to_u16(Opcode::SET_DRIVER_VERSION));
  const std::string_view v = "kbv,mlx5,0.1";
  in.set_bytes(set_driver_version_in::driver_version,
               std::span(reinterpret_cast<const std::byte*>(v.data()), v.size()));
  EXPECT_EQ(b[0], 0x01);
  EXPECT_EQ(b[1], 0x0D);
  EXPECT_EQ(b[16], 'k');
  EXPECT_EQ(b[16 + v.size() - 1], '1');
  EXPECT_EQ(b[16 + v.size()], 0);
  EXPECT_EQ(b.b.size(), 80u);
}

}  // namespace
}  // namespace kbv::prm
