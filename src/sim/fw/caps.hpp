// SPDX-License-Identifier: BSD-3-Clause
//
// Device capabilities of the model (QUERY_HCA_CAP / SET_HCA_CAP): for each
// supported capability type a "max" set (what the device can do) and a
// "current" set (what is in force; SET_HCA_CAP changes it before INIT_HCA).
// Layouts: prm/hca_cap.hpp (mlx5_ifc.h cmd_hca_cap_bits, roce_cap_bits,
// atomic_caps_bits; each set is the 4096-byte hca_cap_union).
//
// Supported types: GENERAL (0), ATOMIC (3), ROCE (4); any other type is
// answered BAD_PARAM. The defaults describe a one-port Ethernet ConnectX-5
// running RoCEv2 (values in caps.cpp, each with its meaning); the model's
// object commands enforce them (log_max_qp, log_max_cq_sz, ...).
//
// SET_HCA_CAP (GENERAL) applies only the fields a driver may set, each
// checked against its max: cmdif_checksum, log_max_qp, pkey_table_size,
// log_uar_page_sz, uar_4k, cqe_version. Every other field of the input is
// ignored (drivers send the queried current set back with a few changes, as
// the kernel's handle_hca_cap does). SET_HCA_CAP of ROCE/ATOMIC changes
// nothing and succeeds when the request does not exceed max.
//
// Threading: the firmware thread only.
#pragma once

#include "hca/prm/hca_cap.hpp"
#include "hca/prm/opcodes.hpp"
#include "sim/fw/registry.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kbv::sim::fw {

// log2 of the number of EQs (cmd_hca_cap.log_max_eq): eqn is 8 bits in the
// EQ doorbell, the model offers 128.
inline constexpr uint32_t kLogMaxEq = 7;

class Caps {
 public:
  static constexpr std::size_t kBytes = prm::hca_cap_union::kBits / 8;  // 4096

  explicit Caps(bool checksum);

  // The max / current set of a capability type; empty when unsupported.
  std::span<const std::byte> max(uint16_t cap_type) const;
  std::span<std::byte> cur(uint16_t cap_type);
  std::span<const std::byte> cur(uint16_t cap_type) const;

  prm::CRef<prm::cmd_hca_cap> general() const;
  prm::CRef<prm::cmd_hca_cap> general_max() const;
  prm::CRef<prm::roce_cap> roce() const;

  // cmdif_checksum in force (nonzero): signatures are checked and produced.
  bool checksum_enabled() const;

  // SET_HCA_CAP of `cap_type` with the 4096-byte union `req`.
  Outcome set(uint16_t cap_type, std::span<const std::byte> req);

  // Back to the defaults (reset, DISABLE_HCA).
  void reset();

 private:
  struct Set {
    uint16_t type;
    std::vector<std::byte> max;
    std::vector<std::byte> cur;
  };
  Set* find(uint16_t type);
  const Set* find(uint16_t type) const;

  bool checksum_default_;
  std::vector<Set> sets_;
};

// QUERY_HCA_CAP and SET_HCA_CAP (caps.cpp).
void register_cap_commands(CommandRegistry& r);

}  // namespace kbv::sim::fw
