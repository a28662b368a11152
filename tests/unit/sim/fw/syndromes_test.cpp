// SPDX-License-Identifier: BSD-3-Clause
// The model's one syndrome table (src/sim/fw/syndromes.hpp): every value
// nonzero and distinct. ObjSyndromes checks the values of the object
// commands by name; Table reads the header itself, so a syndrome added
// anywhere in it is checked without being listed here.
#include "sim/fw/syndromes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace kbv::sim::fw::synd {
namespace {

TEST(ObjSyndromes, NonzeroAndDistinct) {
  std::vector<uint32_t> all = {
      kUnknownOpcode,
      kInputTooShort,
      kOutputTooShort,
      kBadOpMod,
      kNotEnabled,
      kNotInitialized,
      kInjected,
      kBadUid,
      kPdExhausted,
      kPdUnknown,
      kPdInUse,
      kTdExhausted,
      kTdUnknown,
      kMkeyAccessMode,
      kMkeyPdUnknown,
      kMkeyQpn,
      kMkeyLogPageSize,
      kMkeyUnsupported,
      kMkeyRights,
      kMkeyLength64,
      kMkeyRange,
      kMkeyOctwords,
      kMkeyActualSize,
      kMkeyMttTooShort,
      kMkeyMttMisaligned,
      kMkeyExhausted,
      kMkeyTooManyMtts,
      kQueryMkeyUnknown,
      kDestroyMkeyUnknown,
      kCqLogSize,
      kCqCqeSize,
      kCqUarUnknown,
      kCqEqnUnknown,
      kCqLogPageSize,
      kCqPasTooShort,
      kCqPasMisaligned,
      kCqDbrMisaligned,
      kCqUnsupported,
      kCqPeriodMode,
      kCqExhausted,
      kDestroyCqUnknown,
      kDestroyCqInUse,
      kQueryCqUnknown,
      kModifyCqUnknown,
      kModifyCqSelect,
      kModifyCqEqnUnknown,
      kResizeCqNoSize,
      kResizeCqLogSize,
      kResizeCqOutstanding,
      kResizeCqLogPageSize,
      kResizeCqPasTooShort,
      kResizeCqPasMisaligned,
      kModifyCqUmem,
      kSrqLogSize,
      kSrqStride,
      kSrqPdUnknown,
      kSrqCqUnknown,
      kSrqUnsupported,
      kSrqLogPageSize,
      kSrqPasTooShort,
      kSrqPasMisaligned,
      kSrqDbrMisaligned,
      kSrqLwm,
      kSrqExhausted,
      kDestroySrqUnknown,
      kDestroySrqInUse,
      kQuerySrqUnknown,
      kArmRqUnknown,
      kArmRqLwm,
      kQpServiceType,
      kQpPdUnknown,
      kQpCqSndUnknown,
      kQpCqRcvUnknown,
      kQpLogSqSize,
      kQpLogRqSize,
      kQpRqStride,
      kQpRqType,
      kQpSrqUnknown,
      kQpUarUnknown,
      kQpLogPageSize,
      kQpPasTooShort,
      kQpPasMisaligned,
      kQpDbrMisaligned,
      kQpUnsupported,
      kQpInputQpn,
      kQpOptParam,
      kQpExhausted,
      kQpRoceDisabled,
      kQpLogMsgMax,
      kQpPmState,
      kQpCounterSet,
      kQpNoQueues,
      kQpTsFormat,
      kDestroyQpUnknown,
      kDestroyQpAttached,
      kQueryQpUnknown,
      kUmemNoMtt,
      kUmemLogPageSize,
      kUmemPageOffset,
      kUmemMttTooShort,
      kUmemMttMisaligned,
      kUmemNoAccess,
      kUmemExhausted,
      kUmemTooManyMtts,
      kDestroyUmemUnknown,
      kDestroyUmemInUse,
      kMcgQpUnknown,
      kMcgNotUd,
      kMcgNotMulticast,
      kMcgDuplicate,
      kMcgGroupFull,
      kMcgExhausted,
      kDetachQpUnknown,
      kDetachNoGroup,
      kDetachNotMember,
      kVportStateOther,
      kNicVportOther,
      kModNicVportOther,
      kModNicVportSelect,
      kModNicVportMtu,
      kHcaVportOther,
      kHcaVportPort,
      kGidOther,
      kGidPort,
      kGidIndex,
      kGidOutLen,
      kPkeyOther,
      kPkeyPort,
      kPkeyIndex,
      kPkeyOutLen,
      kQueryRoceIndex,
      kQueryRocePort,
      kSetRoceIndex,
      kSetRocePort,
      kSetRoceVersion,
      kSetRoceL3Type,
      kSetRoceIpv4Mapped,
  };
  const uint16_t qp_checks[] = {
      kQpUnknown,     kQpBadState, kQpOptMask, kQpAltPath,      kQpPort, kQpPkeyIndex,
      kQpAccessFlags, kQpMtu,      kQpGrh,     kQpSgidIndex,    kQpRgid, kQpRraMax,
      kQpSraMax,      kQpSrqn,     kQpCqnRcv,  kQpPmStateParam, kQpDbr,  kQpCounterSetParam,
      kQpEce,         kQpMsgMax,   kQpUdpSport};
  for (prm::Opcode op :
       {prm::Opcode::RST2INIT_QP, prm::Opcode::INIT2INIT_QP, prm::Opcode::INIT2RTR_QP,
        prm::Opcode::RTR2RTS_QP, prm::Opcode::RTS2RTS_QP, prm::Opcode::SQERR2RTS_QP,
        prm::Opcode::SQD_RTS_QP, prm::Opcode::TO_ERR_QP, prm::Opcode::TO_RST_QP})
    for (uint16_t c : qp_checks) all.push_back(qp_synd(op, c));
  for (uint32_t v : all) EXPECT_NE(v, 0u);
  std::vector<uint32_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

// Every `inline constexpr` syndrome of the header: generic ones (0x01..0xff,
// distinct), per-command ones at(opcode, check) (distinct pairs, checks
// 1..0xff), the QP transition checks (0x100..0x1ff) and umem placement checks
// (0x200..0x2ff), distinct in their range, so no combination collides.
TEST(Syndromes, Table) {
  std::ifstream f(KBV_SOURCE_ROOT "/src/sim/fw/syndromes.hpp");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  // One declaration per ';' with whitespace collapsed (some wrap).
  const std::string text = std::regex_replace(ss.str(), std::regex(R"(\s+)"), " ");
  const std::regex decl(R"(inline constexpr uint(16|32)_t (k\w+) = ([^;]+);)");
  const std::regex at_re(R"(at\(prm::Opcode::(\w+), (\d+)\))");
  const std::regex hex_re(R"(0x([0-9a-fA-F]+))");
  std::set<std::pair<std::string, int>> pairs;
  std::set<long> generic, qp, umem;
  size_t n = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator();
       ++it, ++n) {
    const std::string name = (*it)[2], value = (*it)[3];
    SCOPED_TRACE(name + " = " + value);
    std::smatch m;
    if (std::regex_match(value, m, at_re)) {
      const int check = std::stoi(m[2]);
      EXPECT_TRUE(check >= 1 && check < 0x100);
      EXPECT_TRUE(pairs.insert({m[1], check}).second) << "duplicate at()";
    } else if (std::regex_match(value, m, hex_re)) {
      const long v = std::stol(m[1], nullptr, 16);
      std::set<long>& group = name.starts_with("kQp")     ? qp
                              : name.starts_with("kUmem") ? umem
                                                          : generic;
      const long lo = &group == &qp ? 0x100 : &group == &umem ? 0x200 : 0x01;
      EXPECT_TRUE(v >= lo && v < lo + (lo == 1 ? 0xff : 0x100));
      EXPECT_TRUE(group.insert(v).second) << "duplicate value";
    } else {
      ADD_FAILURE() << "neither at(opcode, check) nor a hex constant";
    }
  }
  EXPECT_GT(n, 200u);  // the whole table was read
  EXPECT_EQ(n, pairs.size() + generic.size() + qp.size() + umem.size());
  // Spot checks that the text is the table the code compiles.
  EXPECT_EQ(kUnknownOpcode, 0x01u);
  EXPECT_EQ(kPdInUse, at(prm::Opcode::DEALLOC_PD, 2));
  EXPECT_EQ(qp_synd(prm::Opcode::INIT2RTR_QP, kQpMtu), at(prm::Opcode::INIT2RTR_QP, 0x108));
}

}  // namespace
}  // namespace kbv::sim::fw::synd
