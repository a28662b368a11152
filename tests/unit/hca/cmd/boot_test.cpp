// SPDX-License-Identifier: BSD-3-Clause
// Golden encodings of the bring-up commands (hca/cmd/boot.hpp): byte offsets
// from mlx5_ifc.h, written out here independently of the prm tables.
#include "hca/cmd/boot.hpp"

#include "../cmd_harness.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using BootCmdTest = CmdHarness;

TEST_F(BootCmdTest, EnableHcaEncodesFunctionId) {
  Status got{KBV_PENDING};
  ASSERT_EQ(enable_hca(*cmdq, FunctionAttr{.function_id = 0x1234}, [&](Status s) { got = s; }),
            KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 16u);
  EXPECT_EQ(be16(in, 0), 0x104u);
  EXPECT_EQ(be16(in, 6), 0u);
  EXPECT_EQ(be16(in, 10), 0x1234u);
  EXPECT_EQ(outlen(), 16u);  // enable_hca_out is 12 B; the queue asks for 16
  answer_ok();
  EXPECT_TRUE(got.is_ok());
}

TEST_F(BootCmdTest, DisableHca) {
  Status got{KBV_PENDING};
  ASSERT_EQ(disable_hca(*cmdq, {}, [&](Status s) { got = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x105u);
  std::vector<std::byte> out(16);
  out[0] = std::byte{0x4};  // bad system state
  put32(out, 4, 0xabcdef);
  answer(out);
  EXPECT_EQ(got, KBV_ERR_FW_BAD_SYS_STATE);
  EXPECT_EQ(got.syndrome(), 0xabcdefu);
}

TEST_F(BootCmdTest, QueryIssiParsesCurrentAndSupported) {
  Result<IssiInfo> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_issi(*cmdq, [&](Result<IssiInfo> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x10Au);
  EXPECT_EQ(outlen(), 112u);
  std::vector<std::byte> out(112);
  out[11] = std::byte{0};  // current_issi 0
  put32(out, 108, 0x3);    // ISSI 0 and 1
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->current_issi, 0u);
  EXPECT_TRUE(got->supports(1));
  EXPECT_TRUE(got->supports(0));
  EXPECT_FALSE(got->supports(2));
}

TEST_F(BootCmdTest, SetIssi) {
  Status got{KBV_PENDING};
  ASSERT_EQ(set_issi(*cmdq, 1, [&](Status s) { got = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x10Bu);
  EXPECT_EQ(be16(in, 10), 1u);
  answer_ok();
  EXPECT_TRUE(got.is_ok());
}

TEST_F(BootCmdTest, InitAndTeardownHca) {
  Status a{KBV_PENDING}, b{KBV_PENDING};
  ASSERT_EQ(init_hca(*cmdq, [&](Status s) { a = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(in.size(), 32u);
  EXPECT_EQ(be16(in, 0), 0x102u);
  answer_ok();
  EXPECT_TRUE(a.is_ok());
  ASSERT_EQ(teardown_hca(*cmdq, prm::TeardownProfile::FORCE_CLOSE, [&](Status s) { b = s; }),
            KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x103u);
  EXPECT_EQ(be16(in, 10), 1u);  // profile
  answer_ok();
  EXPECT_TRUE(b.is_ok());
}

TEST_F(BootCmdTest, HostEndiannessIsAnAccessRegWrite) {
  Status got{KBV_PENDING};
  ASSERT_EQ(set_host_endianness(*cmdq, [&](Status s) { got = s; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 32u);
  EXPECT_EQ(be16(in, 0), 0x805u);
  EXPECT_EQ(be16(in, 6), 0u);        // op_mod write
  EXPECT_EQ(be16(in, 10), 0x7004u);  // HOST_ENDIANNESS
  EXPECT_EQ(u8(in, 16) & 0x80, 0u);  // he = 0: this host is little-endian
  EXPECT_EQ(outlen(), 32u);
  answer_ok();
  EXPECT_TRUE(got.is_ok());
}

TEST_F(BootCmdTest, AccessRegReadReturnsRegisterData) {
  AccessRegAttr a;
  a.register_id = prm::RegId::PAOS;
  a.argument = 0x55;
  a.data.resize(16);
  Result<std::vector<std::byte>> got{Status{KBV_PENDING}};
  ASSERT_EQ(access_reg(*cmdq, a, [&](Result<std::vector<std::byte>> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 6), 1u);  // read
  EXPECT_EQ(be16(in, 10), 0x5006u);
  EXPECT_EQ(be32(in, 12), 0x55u);
  std::vector<std::byte> out(32);
  put32(out, 16, 0x01020304);
  answer(out);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 16u);
  EXPECT_EQ(be32(*got, 0), 0x01020304u);
  a.data.resize(3);
  EXPECT_EQ(access_reg(*cmdq, a, [](Result<std::vector<std::byte>>) {}), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(BootCmdTest, QueryAdapterParsesPsid) {
  Result<AdapterInfo> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_adapter(*cmdq, [&](Result<AdapterInfo> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x101u);
  ASSERT_EQ(outlen(), 272u);
  std::vector<std::byte> out(272);
  put32(out, 16 + 24, 0x0002c9);  // ieee_vendor_id (low 24 bits of dword 6)
  const char psid[] = "MT_0000000008";
  for (size_t i = 0; i < sizeof(psid) - 1; ++i) out[16 + 240 + i] = std::byte(psid[i]);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->ieee_vendor_id, 0x0002c9u);
  EXPECT_EQ(got->psid, "MT_0000000008");
}

TEST_F(BootCmdTest, SetDriverVersionAndNop) {
  Status a{KBV_PENDING}, b{KBV_PENDING};
  ASSERT_EQ(set_driver_version(*cmdq, "kbv,0.1", [&](Status s) { a = s; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 80u);
  EXPECT_EQ(be16(in, 0), 0x10Du);
  EXPECT_EQ(u8(in, 16), 'k');
  EXPECT_EQ(u8(in, 22), '1');
  EXPECT_EQ(u8(in, 23), 0u);
  answer_ok();
  ASSERT_EQ(nop(*cmdq, [&](Status s) { b = s; }), KBV_PENDING);
  EXPECT_EQ(be16(posted(), 0), 0x80Du);
  answer_ok();
  EXPECT_TRUE(a.is_ok());
  EXPECT_TRUE(b.is_ok());
}

TEST_F(BootCmdTest, NoCallbackIsRefused) {
  EXPECT_EQ(nop(*cmdq, DoneStatus{}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(query_issi(*cmdq, Done<IssiInfo>{}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(fw.rung().empty());
}

}  // namespace
}  // namespace kbv::hca::cmd
