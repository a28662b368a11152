// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/hca_cmds.hpp"

#include "common/log.hpp"
#include "hca/prm/boot.hpp"
#include "sim/fw/context.hpp"
#include "sim/fw/syndromes.hpp"

#include <cstring>
#include <string_view>

namespace kbv::sim::fw {

namespace {

using prm::CmdStatus;
constexpr const char* kLog = "sim.fw";
constexpr uint32_t kSupportedIssiMask = 0x3;  // ISSI 0 and 1 (query_issi_out.supported_issi_dw0)

template <class L>
constexpr uint32_t bytes_of() {
  return L::kBits / 8;
}

Outcome enable_hca(FwContext& ctx, const Command& c, std::span<std::byte>) {
  prm::CRef<prm::enable_hca_in> in(c.in.data());
  if (in.get(prm::enable_hca_in::embedded_cpu_function) != 0 ||
      in.get(prm::enable_hca_in::function_id) != 0)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kEnableFunctionId);
  if (ctx.hca().enabled) return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kEnableTwice);
  ctx.hca().enabled = true;
  return Outcome::ok();
}

Outcome disable_hca(FwContext& ctx, const Command& c, std::span<std::byte>) {
  prm::CRef<prm::disable_hca_in> in(c.in.data());
  if (in.get(prm::disable_hca_in::embedded_cpu_function) != 0 ||
      in.get(prm::disable_hca_in::function_id) != 0)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kDisableFunctionId);
  if (ctx.hca().initialized)
    return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kDisableInitialized);
  if (ctx.pages().held() != 0)
    log::warn(kLog, "DISABLE_HCA with {} firmware pages not reclaimed: forgotten",
              ctx.pages().held());
  ctx.disable();
  return Outcome::ok();
}

Outcome query_issi(FwContext& ctx, const Command&, std::span<std::byte> out) {
  prm::Ref<prm::query_issi_out> o(out.data());
  o.set(prm::query_issi_out::current_issi, ctx.hca().issi);
  o.set(prm::query_issi_out::supported_issi_dw0, kSupportedIssiMask);
  return Outcome::ok();
}

Outcome set_issi(FwContext& ctx, const Command& c, std::span<std::byte>) {
  const uint64_t issi =
      prm::CRef<prm::set_issi_in>(c.in.data()).get(prm::set_issi_in::current_issi);
  if (issi >= 32 || !((kSupportedIssiMask >> issi) & 1))
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kIssiUnsupported);
  if (ctx.hca().initialized)
    return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kIssiAfterInit);
  ctx.hca().issi = static_cast<uint16_t>(issi);
  return Outcome::ok();
}

Outcome init_hca(FwContext& ctx, const Command&, std::span<std::byte>) {
  if (ctx.hca().initialized) return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kInitTwice);
  if (!ctx.pages().has_boot_pages())
    return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kInitNoBootPages);
  if (!ctx.pages().has_init_pages())
    return Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kInitNoInitPages);
  ctx.hca().initialized = true;
  for (const auto& hook : ctx.config().on_init_hca) hook(ctx);
  return Outcome::ok();
}

Outcome teardown_hca(FwContext& ctx, const Command& c, std::span<std::byte>) {
  const uint64_t profile =
      prm::CRef<prm::teardown_hca_in>(c.in.data()).get(prm::teardown_hca_in::profile);
  if (profile != static_cast<uint16_t>(prm::TeardownProfile::GRACEFUL_CLOSE))
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kTeardownProfile);
  ctx.teardown();
  return Outcome::ok();
}

Outcome query_adapter(FwContext&, const Command&, std::span<std::byte> out) {
  auto blk =
      prm::Ref<prm::query_adapter_out>(out.data()).at(prm::query_adapter_out::query_adapter_struct);
  using P = prm::query_adapter_param_block;
  blk.set(P::ieee_vendor_id, 0x0002c9);  // Mellanox OUI
  blk.set(P::vsd_vendor_id, 0x15b3);     // PCI vendor id
  constexpr std::string_view kVsd = "kbv HCA model";
  constexpr std::string_view kPsid = "MT_0000000008";  // a ConnectX-5 board id
  blk.set_bytes(P::vsd, std::as_bytes(std::span(kVsd.data(), kVsd.size())));
  blk.set_bytes(P::vsd_contd_psid, std::as_bytes(std::span(kPsid.data(), kPsid.size())));
  return Outcome::ok();
}

// SET_DRIVER_VERSION (mlx5_ifc.h set_driver_version_in: 64 bytes of ASCII,
// NUL padded; the kernel's mlx5_set_driver_version sends "Linux,mlx5_core,x").
// Sent only when cmd_hca_cap.driver_version is advertised (the model does).
Outcome set_driver_version(FwContext& ctx, const Command& c, std::span<std::byte>) {
  auto v = prm::CRef<prm::set_driver_version_in>(c.in.data())
               .bytes(prm::set_driver_version_in::driver_version);
  std::string text;
  bool padding = false;
  for (std::byte b : v) {
    const auto ch = static_cast<unsigned char>(b);
    if (ch == 0) {
      padding = true;
      continue;
    }
    if (padding || ch < 0x20 || ch > 0x7E)
      return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kDriverVersionChars);
    text.push_back(static_cast<char>(ch));
  }
  ctx.hca().driver_version = std::move(text);
  return Outcome::ok();
}

Outcome nop(FwContext&, const Command&, std::span<std::byte>) { return Outcome::ok(); }

}  // namespace

// ACCESS_REG (mlx5_ifc.h access_register_in/out): register_data follows the
// 16-byte header in both directions.
Outcome access_reg_host_endianness(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::access_register_in> in(c.in.data());
  if (in.get(prm::access_register_in::register_id) !=
      static_cast<uint16_t>(prm::RegId::HOST_ENDIANNESS))
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kRegUnsupported);
  constexpr uint32_t kHdr = bytes_of<prm::access_register_in>();
  if (c.in.size() < prm::kHostEndiannessRegLen)
    return Outcome::fail(CmdStatus::BAD_INP_LEN_ERR, synd::kRegDataShort);
  if (out.size() < prm::kHostEndiannessRegLen)
    return Outcome::fail(CmdStatus::BAD_OUTP_LEN_ERR, synd::kRegDataShort);
  if (c.op_mod == static_cast<uint16_t>(prm::AccessRegOpMod::WRITE)) {
    prm::CRef<prm::register_host_endianness> reg(c.in.data() + kHdr);
    ctx.hca().host_endianness = static_cast<uint8_t>(reg.get(prm::register_host_endianness::he));
  }
  // Read and write both return the register contents.
  prm::Ref<prm::register_host_endianness>(out.data() + kHdr)
      .set(prm::register_host_endianness::he, ctx.hca().host_endianness);
  return Outcome::ok();
}

void register_hca_commands(CommandRegistry& r) {
  using prm::Opcode;
  (void)r.add(Opcode::ENABLE_HCA,
              Handler::make(bytes_of<prm::enable_hca_in>(), bytes_of<prm::enable_hca_out>(),
                            Requires::kNothing, enable_hca));
  (void)r.add(Opcode::DISABLE_HCA,
              Handler::make(bytes_of<prm::disable_hca_in>(), bytes_of<prm::disable_hca_out>(),
                            Requires::kEnabled, disable_hca));
  (void)r.add(Opcode::QUERY_ISSI,
              Handler::make(bytes_of<prm::query_issi_in>(), bytes_of<prm::query_issi_out>(),
                            Requires::kEnabled, query_issi));
  (void)r.add(Opcode::SET_ISSI,
              Handler::make(bytes_of<prm::set_issi_in>(), bytes_of<prm::set_issi_out>(),
                            Requires::kEnabled, set_issi));
  (void)r.add(
      Opcode::ACCESS_REG,
      Handler::make(bytes_of<prm::access_register_in>(), bytes_of<prm::access_register_out>(),
                    Requires::kEnabled, access_reg_host_endianness,
                    std::vector<uint16_t>{static_cast<uint16_t>(prm::AccessRegOpMod::WRITE),
                                          static_cast<uint16_t>(prm::AccessRegOpMod::READ)}));
  // init_hca_in grew sw_owner_id (32 B in today's mlx5_ifc.h); the PRM's
  // original 16 B input is accepted.
  (void)r.add(Opcode::INIT_HCA,
              Handler::make(16, bytes_of<prm::init_hca_out>(), Requires::kEnabled, init_hca));
  (void)r.add(Opcode::TEARDOWN_HCA,
              Handler::make(bytes_of<prm::teardown_hca_in>(), bytes_of<prm::teardown_hca_out>(),
                            Requires::kInitialized, teardown_hca));
  (void)r.add(Opcode::QUERY_ADAPTER,
              Handler::make(bytes_of<prm::query_adapter_in>(), bytes_of<prm::query_adapter_out>(),
                            Requires::kEnabled, query_adapter));
  (void)r.add(Opcode::SET_DRIVER_VERSION, Handler::make(bytes_of<prm::set_driver_version_in>(),
                                                        bytes_of<prm::set_driver_version_out>(),
                                                        Requires::kEnabled, set_driver_version));
  (void)r.add(Opcode::NOP, Handler::any_mod(16, 16, Requires::kNothing, nop));
}

}  // namespace kbv::sim::fw
