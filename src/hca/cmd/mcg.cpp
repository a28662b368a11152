// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/mcg.hpp"

#include "hca/prm/mcg.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

namespace {
template <class L>
Status mcg_cmd(CmdQueue& q, Opcode op, uint32_t qpn, const std::array<uint8_t, 16>& gid,
               DoneStatus done) {
  if (!fits(L::qpn, qpn)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(op, 0, L::kBits / 8);
  Ref<L> r(in.data());
  r.set(L::qpn, qpn);
  r.set_bytes(L::multicast_gid, std::as_bytes(std::span(gid)));
  return exec_status(q, in, 16, std::move(done));
}
}  // namespace

Status attach_to_mcg(CmdQueue& q, uint32_t qpn, const std::array<uint8_t, 16>& gid,
                     DoneStatus done) {
  return mcg_cmd<attach_to_mcg_in>(q, Opcode::ATTACH_TO_MCG, qpn, gid, std::move(done));
}

Status detach_from_mcg(CmdQueue& q, uint32_t qpn, const std::array<uint8_t, 16>& gid,
                       DoneStatus done) {
  return mcg_cmd<detach_from_mcg_in>(q, Opcode::DETACH_FROM_MCG, qpn, gid, std::move(done));
}

}  // namespace kbv::hca::cmd
