// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/caps.hpp"

#include "hca/prm/hca_cap.hpp"

namespace kbv::hca {

using prm::cmd_hca_cap;
using prm::roce_cap;

void HcaCaps::parse_general(std::span<const std::byte> cap) {
  if (cap.size() < cmd_hca_cap::kBits / 8) return;
  prm::CRef<cmd_hca_cap> c(cap.data());
  auto g = [&](prm::Field<cmd_hca_cap> f) { return static_cast<uint32_t>(c.get(f)); };
  log_max_qp = g(cmd_hca_cap::log_max_qp);
  log_max_qp_sz = g(cmd_hca_cap::log_max_qp_sz);
  log_max_cq = g(cmd_hca_cap::log_max_cq);
  log_max_cq_sz = g(cmd_hca_cap::log_max_cq_sz);
  log_max_eq = g(cmd_hca_cap::log_max_eq);
  log_max_eq_sz = g(cmd_hca_cap::log_max_eq_sz);
  log_max_srq = g(cmd_hca_cap::log_max_srq);
  log_max_srq_sz = g(cmd_hca_cap::log_max_srq_sz);
  log_max_mkey = g(cmd_hca_cap::log_max_mkey);
  log_max_pd = g(cmd_hca_cap::log_max_pd);
  log_max_transport_domain = g(cmd_hca_cap::log_max_transport_domain);
  log_max_msg = g(cmd_hca_cap::log_max_msg);
  log_max_mcg = g(cmd_hca_cap::log_max_mcg);
  max_qp_mcg = g(cmd_hca_cap::max_qp_mcg);
  log_max_ra_req_qp = g(cmd_hca_cap::log_max_ra_req_qp);
  log_max_ra_res_qp = g(cmd_hca_cap::log_max_ra_res_qp);
  max_num_eqs = g(cmd_hca_cap::max_num_eqs);
  num_ports = g(cmd_hca_cap::num_ports);
  port_type = g(cmd_hca_cap::port_type);
  gid_table_size = g(cmd_hca_cap::gid_table_size);
  pkey_table_size = g(cmd_hca_cap::pkey_table_size);
  local_ca_ack_delay = g(cmd_hca_cap::local_ca_ack_delay);
  device_frequency_khz = g(cmd_hca_cap::device_frequency_khz);
  cmdif_checksum = g(cmd_hca_cap::cmdif_checksum);
  cqe_version = g(cmd_hca_cap::cqe_version);
  log_pg_sz = g(cmd_hca_cap::log_pg_sz);
  uar_4k = g(cmd_hca_cap::uar_4k);
  log_uar_page_sz = g(cmd_hca_cap::log_uar_page_sz);
  num_of_uars_per_page = g(cmd_hca_cap::num_of_uars_per_page);
  bf = g(cmd_hca_cap::bf);
  log_bf_reg_size = g(cmd_hca_cap::log_bf_reg_size);
  max_wqe_sz_sq = g(cmd_hca_cap::max_wqe_sz_sq);
  max_wqe_sz_rq = g(cmd_hca_cap::max_wqe_sz_rq);
  roce = g(cmd_hca_cap::roce);
  atomic = g(cmd_hca_cap::atomic);
  rc = g(cmd_hca_cap::rc);
  uc = g(cmd_hca_cap::uc);
  ud = g(cmd_hca_cap::ud);
  xrc = g(cmd_hca_cap::xrc);
  driver_version = g(cmd_hca_cap::driver_version);
  release_all_pages = g(cmd_hca_cap::release_all_pages);
  fast_teardown = g(cmd_hca_cap::fast_teardown);
  force_teardown = g(cmd_hca_cap::force_teardown);
}

void HcaCaps::parse_roce(std::span<const std::byte> cap) {
  if (cap.size() < roce_cap::kBits / 8) return;
  prm::CRef<roce_cap> c(cap.data());
  roce_version = static_cast<uint32_t>(c.get(roce_cap::roce_version));
  roce_l3_type = static_cast<uint32_t>(c.get(roce_cap::l3_type));
  r_roce_dest_udp_port = static_cast<uint32_t>(c.get(roce_cap::r_roce_dest_udp_port));
  r_roce_min_src_udp_port = static_cast<uint32_t>(c.get(roce_cap::r_roce_min_src_udp_port));
  r_roce_max_src_udp_port = static_cast<uint32_t>(c.get(roce_cap::r_roce_max_src_udp_port));
  roce_address_table_size = static_cast<uint32_t>(c.get(roce_cap::roce_address_table_size));
  qp_ts_format = static_cast<uint32_t>(c.get(roce_cap::qp_ts_format));
}

namespace cmd {

using namespace prm;  // NOLINT

static_assert(hca_cap_union::kBits / 8 == kCapBlockBytes);

Status query_hca_cap(CmdQueue& q, CapType type, CapMode mode, Done<std::vector<std::byte>> done) {
  auto in = make_in(Opcode::QUERY_HCA_CAP, hca_cap_op_mod(type, mode), query_hca_cap_in::kBits / 8);
  return exec<std::vector<std::byte>>(
      q, in, query_hca_cap_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<std::vector<std::byte>> {
        auto c = out.subspan(query_hca_cap_out::capability.off / 8, kCapBlockBytes);
        return std::vector<std::byte>(c.begin(), c.end());
      },
      std::move(done));
}

Status set_hca_cap(CmdQueue& q, CapType type, std::span<const std::byte> cap, DoneStatus done) {
  if (cap.size() != kCapBlockBytes) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::SET_HCA_CAP, set_hca_cap_op_mod(type), set_hca_cap_in::kBits / 8);
  std::memcpy(in.data() + set_hca_cap_in::capability.off / 8, cap.data(), kCapBlockBytes);
  return exec_status(q, in, set_hca_cap_out::kBits / 8, std::move(done));
}

}  // namespace cmd
}  // namespace kbv::hca
