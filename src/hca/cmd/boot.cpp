// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/boot.hpp"

#include <endian.h>

#include "hca/prm/boot.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT: layout names read as the PRM's

namespace {
template <class L>
std::vector<std::byte> in_of(Opcode op, uint16_t op_mod = 0) {
  return make_in(op, op_mod, L::kBits / 8);
}
}  // namespace

Status enable_hca(CmdQueue& q, const FunctionAttr& a, DoneStatus done) {
  auto in = in_of<enable_hca_in>(Opcode::ENABLE_HCA);
  Ref<enable_hca_in> r(in.data());
  r.set(enable_hca_in::function_id, a.function_id);
  r.set(enable_hca_in::embedded_cpu_function, a.embedded_cpu_function);
  return exec_status(q, in, enable_hca_out::kBits / 8, std::move(done));
}

Status disable_hca(CmdQueue& q, const FunctionAttr& a, DoneStatus done) {
  auto in = in_of<disable_hca_in>(Opcode::DISABLE_HCA);
  Ref<disable_hca_in> r(in.data());
  r.set(disable_hca_in::function_id, a.function_id);
  r.set(disable_hca_in::embedded_cpu_function, a.embedded_cpu_function);
  return exec_status(q, in, disable_hca_out::kBits / 8, std::move(done));
}

Status query_issi(CmdQueue& q, Done<IssiInfo> done) {
  auto in = in_of<query_issi_in>(Opcode::QUERY_ISSI);
  return exec<IssiInfo>(
      q, in, query_issi_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<IssiInfo> {
        CRef<query_issi_out> o(out.data());
        IssiInfo i;
        i.current_issi = static_cast<uint16_t>(o.get(query_issi_out::current_issi));
        i.supported_issi_dw0 = static_cast<uint32_t>(o.get(query_issi_out::supported_issi_dw0));
        return i;
      },
      std::move(done));
}

Status set_issi(CmdQueue& q, uint16_t issi, DoneStatus done) {
  auto in = in_of<set_issi_in>(Opcode::SET_ISSI);
  Ref<set_issi_in>(in.data()).set(set_issi_in::current_issi, issi);
  return exec_status(q, in, set_issi_out::kBits / 8, std::move(done));
}

Status init_hca(CmdQueue& q, DoneStatus done) {
  auto in = in_of<init_hca_in>(Opcode::INIT_HCA);
  return exec_status(q, in, init_hca_out::kBits / 8, std::move(done));
}

Status teardown_hca(CmdQueue& q, TeardownProfile profile, DoneStatus done) {
  auto in = in_of<teardown_hca_in>(Opcode::TEARDOWN_HCA);
  Ref<teardown_hca_in>(in.data()).set(teardown_hca_in::profile, static_cast<uint16_t>(profile));
  return exec_status(q, in, teardown_hca_out::kBits / 8, std::move(done));
}

Status access_reg(CmdQueue& q, const AccessRegAttr& a, Done<std::vector<std::byte>> done) {
  if (a.data.empty() || a.data.size() % 4 != 0) return Status{KBV_ERR_INVALID_ARGUMENT};
  const size_t fixed = access_register_in::kBits / 8;
  auto in = make_in(Opcode::ACCESS_REG, static_cast<uint16_t>(a.op), fixed + a.data.size());
  Ref<access_register_in> r(in.data());
  r.set(access_register_in::register_id, static_cast<uint16_t>(a.register_id));
  r.set(access_register_in::argument, a.argument);
  std::memcpy(in.data() + access_register_in::register_data.byte_off(0), a.data.data(),
              a.data.size());
  const size_t n = a.data.size();
  return exec<std::vector<std::byte>>(
      q, in, static_cast<uint32_t>(access_register_out::kBits / 8 + n),
      [n](std::span<const std::byte> out) -> Result<std::vector<std::byte>> {
        auto d = out.subspan(access_register_out::register_data.byte_off(0), n);
        return std::vector<std::byte>(d.begin(), d.end());
      },
      std::move(done));
}

Status set_host_endianness(CmdQueue& q, DoneStatus done) {
  AccessRegAttr a;
  a.register_id = RegId::HOST_ENDIANNESS;
  a.op = AccessRegOpMod::WRITE;
  a.data.resize(register_host_endianness::kBits / 8);
  Ref<register_host_endianness>(a.data.data())
      .set(register_host_endianness::he, __BYTE_ORDER == __BIG_ENDIAN ? 1 : 0);
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  return access_reg(
      q, a, [done = std::move(done)](Result<std::vector<std::byte>> r) { done(r.status()); });
}

Status query_adapter(CmdQueue& q, Done<AdapterInfo> done) {
  auto in = in_of<query_adapter_in>(Opcode::QUERY_ADAPTER);
  return exec<AdapterInfo>(
      q, in, query_adapter_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<AdapterInfo> {
        CRef<query_adapter_param_block> p =
            CRef<query_adapter_out>(out.data()).at(query_adapter_out::query_adapter_struct);
        AdapterInfo a;
        a.ieee_vendor_id = static_cast<uint32_t>(p.get(query_adapter_param_block::ieee_vendor_id));
        a.vsd_vendor_id = static_cast<uint16_t>(p.get(query_adapter_param_block::vsd_vendor_id));
        auto psid = p.bytes(query_adapter_param_block::vsd_contd_psid);
        for (std::byte b : psid) {
          if (b == std::byte{0}) break;
          a.psid.push_back(static_cast<char>(b));
        }
        while (!a.psid.empty() && a.psid.back() == ' ') a.psid.pop_back();
        return a;
      },
      std::move(done));
}

Status set_driver_version(CmdQueue& q, std::string_view version, DoneStatus done) {
  auto in = in_of<set_driver_version_in>(Opcode::SET_DRIVER_VERSION);
  const size_t n = std::min<size_t>(version.size(), set_driver_version_in::driver_version.size());
  Ref<set_driver_version_in>(in.data()).set_bytes(
      set_driver_version_in::driver_version,
      std::as_bytes(std::span<const char>(version.data(), n)));
  return exec_status(q, in, set_driver_version_out::kBits / 8, std::move(done));
}

Status nop(CmdQueue& q, DoneStatus done) {
  auto in = in_of<nop_in>(Opcode::NOP);
  return exec_status(q, in, nop_out::kBits / 8, std::move(done));
}

}  // namespace kbv::hca::cmd
