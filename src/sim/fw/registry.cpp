// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/registry.hpp"

#include "sim/fw/syndromes.hpp"

#include <algorithm>

namespace kbv::sim::fw {

namespace {
// opcode/uid/op_mod (in) and status/syndrome (out) take the first 8 bytes
// (mlx5_ifc.h mbox_in_bits / mbox_out_bits); some outputs are only 12 bytes
// (enable_hca_out_bits: 0x60 bits).
constexpr uint32_t kMinBytes = 8;

Status validate(const Handler& h) {
  if (!h.fn) return KBV_ERR_INVALID_ARGUMENT;
  if (h.min_inlen < kMinBytes || h.min_outlen < kMinBytes) return KBV_ERR_INVALID_ARGUMENT;
  return Status::ok();
}
}  // namespace

Status CommandRegistry::add(uint16_t opcode, Handler h) {
  if (Status s = validate(h); !s) return s;
  if (table_.contains(opcode)) return KBV_ERR_ALREADY_EXISTS;
  table_.emplace(opcode, std::move(h));
  return Status::ok();
}

Status CommandRegistry::replace(uint16_t opcode, Handler h) {
  if (Status s = validate(h); !s) return s;
  table_.insert_or_assign(opcode, std::move(h));
  return Status::ok();
}

const Handler* CommandRegistry::find(uint16_t opcode) const {
  auto it = table_.find(opcode);
  return it == table_.end() ? nullptr : &it->second;
}

Outcome CommandRegistry::check(const Handler* h, const Command& cmd, std::size_t outlen,
                               bool enabled, bool initialized) {
  using prm::CmdStatus;
  if (h == nullptr) return Outcome::fail(CmdStatus::BAD_OP_ERR, synd::kUnknownOpcode);
  if (cmd.in.size() < h->min_inlen)
    return Outcome::fail(CmdStatus::BAD_INP_LEN_ERR, synd::kInputTooShort);
  if (outlen < h->min_outlen)
    return Outcome::fail(CmdStatus::BAD_OUTP_LEN_ERR, synd::kOutputTooShort);
  if (cmd.uid != 0) return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kBadUid);
  if (!h->any_op_mod) {
    const bool ok = h->op_mods.empty() ? cmd.op_mod == 0
                                       : std::find(h->op_mods.begin(), h->op_mods.end(),
                                                   cmd.op_mod) != h->op_mods.end();
    if (!ok) return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kBadOpMod);
  }
  switch (h->state) {
    case Requires::kNothing: break;
    case Requires::kEnabled:
      if (!enabled) return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kNotEnabled);
      break;
    case Requires::kInitialized:
      if (!enabled) return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kNotEnabled);
      if (!initialized) return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kNotInitialized);
      break;
  }
  return Outcome::ok();
}

}  // namespace kbv::sim::fw
