// SPDX-License-Identifier: BSD-3-Clause
//
// Bring-up and teardown commands: ENABLE/DISABLE_HCA, QUERY/SET_ISSI,
// QUERY/MANAGE_PAGES, INIT/TEARDOWN_HCA, ACCESS_REG (with the host endianness
// register), QUERY_ADAPTER, SET_DRIVER_VERSION, NOP.
//
// Source: kernel include/linux/mlx5/mlx5_ifc.h, struct mlx5_ifc_<name>_bits
// for every table below (bit offsets summed from the member widths and checked
// against the kernel's reserved_at_<offset> names). Opcodes and op_mod values
// are in opcodes.hpp. Every input starts with opcode (bits 0x00..0x0f) and
// op_mod (0x30..0x3f); every output with status (0x00..0x07) and syndrome
// (0x20..0x3f), as in cmd_hdr.hpp.
//
// Threading: layouts and constants only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// mlx5_ifc.h enable_hca_in_bits (16 B).
struct enable_hca_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<enable_hca_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F embedded_cpu_function{0x40, 1};
  static constexpr F function_id{0x50, 16};
};
static_assert(enable_hca_in::kBits / 8 == 16);
static_assert(enable_hca_in::function_id.off / 8 == 10);

// mlx5_ifc.h enable_hca_out_bits (12 B: the kernel declares 0x60 bits).
struct enable_hca_out {
  static constexpr uint32_t kBits = 0x60;
  using F = Field<enable_hca_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(enable_hca_out::kBits / 8 == 12);

// mlx5_ifc.h disable_hca_in_bits (16 B).
struct disable_hca_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<disable_hca_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F embedded_cpu_function{0x40, 1};
  static constexpr F function_id{0x50, 16};
};
static_assert(disable_hca_in::kBits / 8 == 16);

// mlx5_ifc.h disable_hca_out_bits (12 B).
struct disable_hca_out {
  static constexpr uint32_t kBits = 0x60;
  using F = Field<disable_hca_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(disable_hca_out::kBits / 8 == 12);

// mlx5_ifc.h query_issi_in_bits (16 B).
struct query_issi_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_issi_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
};
static_assert(query_issi_in::kBits / 8 == 16);

// mlx5_ifc.h query_issi_out_bits (112 B). The supported-ISSI bitmask is 80
// bytes at byte 32 (reserved_at_100[76][0x8] then supported_issi_dw0): bit n
// of the mask, counted from the least significant bit of its last dword, says
// ISSI n is supported; every ISSI the kernel knows (0 and 1) is in
// supported_issi_dw0, the mask's last dword (byte 108).
struct query_issi_out {
  static constexpr uint32_t kBits = 0x380;
  using F = Field<query_issi_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F current_issi{0x50, 16};
  static constexpr Bytes<query_issi_out> supported_issi{0x100, 80 * 8};
  static constexpr F supported_issi_dw0{0x360, 32};
};
static_assert(query_issi_out::kBits / 8 == 112);
static_assert(query_issi_out::current_issi.off / 8 == 10);
static_assert(query_issi_out::supported_issi.byte_off() == 32);
static_assert(query_issi_out::supported_issi_dw0.off / 8 == 108);
static_assert(query_issi_out::supported_issi_dw0.end() == query_issi_out::supported_issi.end());

// mlx5_ifc.h set_issi_in_bits (16 B).
struct set_issi_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<set_issi_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F current_issi{0x50, 16};
};
static_assert(set_issi_in::kBits / 8 == 16);

// mlx5_ifc.h set_issi_out_bits (16 B).
struct set_issi_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<set_issi_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(set_issi_out::kBits / 8 == 16);

// The interface step the driver sets (docs/PRM.md bring-up step 4: ISSI 1).
inline constexpr uint16_t kIssi = 1;

// mlx5_ifc.h query_pages_in_bits (16 B). op_mod = QueryPagesOpMod.
struct query_pages_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_pages_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F embedded_cpu_function{0x40, 1};
  static constexpr F function_id{0x50, 16};
};
static_assert(query_pages_in::kBits / 8 == 16);

// mlx5_ifc.h query_pages_out_bits (16 B). num_pages is a signed 32-bit count
// (negative: firmware has pages to return).
struct query_pages_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_pages_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F embedded_cpu_function{0x40, 1};
  static constexpr F function_id{0x50, 16};
  static constexpr F num_pages{0x60, 32};
};
static_assert(query_pages_out::kBits / 8 == 16);
static_assert(query_pages_out::num_pages.off / 8 == 12);

// mlx5_ifc.h manage_pages_in_bits (16 B + 8 B per page). op_mod =
// ManagePagesOpMod. With ALLOCATION_SUCCESS, pas[] holds input_num_entries
// 4 KiB-aligned page IOVAs; with HCA_RETURN_PAGES, input_num_entries is the
// number of pages the driver asks back.
struct manage_pages_in {
  static constexpr uint32_t kBits = 0x80;  // fixed part; pas[] follows
  using F = Field<manage_pages_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F embedded_cpu_function{0x40, 1};
  static constexpr F function_id{0x50, 16};
  static constexpr F input_num_entries{0x60, 32};
  static constexpr Array<manage_pages_in> pas{0x80, 64, 0};  // 64-bit page IOVAs
};
static_assert(manage_pages_in::kBits / 8 == 16);
static_assert(manage_pages_in::pas.byte_off(0) == 16 && manage_pages_in::pas.byte_off(1) == 24);

// mlx5_ifc.h manage_pages_out_bits (16 B + 8 B per returned page).
struct manage_pages_out {
  static constexpr uint32_t kBits = 0x80;  // fixed part; pas[] follows
  using F = Field<manage_pages_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F output_num_entries{0x40, 32};
  static constexpr Array<manage_pages_out> pas{0x80, 64, 0};
};
static_assert(manage_pages_out::kBits / 8 == 16);
static_assert(manage_pages_out::output_num_entries.off / 8 == 8);

// Bytes of a MANAGE_PAGES input giving n pages (or output returning n).
constexpr uint32_t manage_pages_len(uint32_t n) { return manage_pages_in::kBits / 8 + 8 * n; }
// Firmware pages are 4 KiB (device.h MLX5_ADAPTER_PAGE_SHIFT 12).
inline constexpr uint32_t kAdapterPageShift = 12;
inline constexpr uint32_t kAdapterPageSize = 1u << kAdapterPageShift;

// mlx5_ifc.h init_hca_in_bits (32 B).
struct init_hca_in {
  static constexpr uint32_t kBits = 0x100;
  using F = Field<init_hca_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F sw_vhca_id{0x62, 14};
  static constexpr Array<init_hca_in> sw_owner_id{0x80, 32, 4};
};
static_assert(init_hca_in::kBits / 8 == 32);
static_assert(init_hca_in::sw_owner_id.byte_off(0) == 16);

// mlx5_ifc.h init_hca_out_bits (16 B).
struct init_hca_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<init_hca_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(init_hca_out::kBits / 8 == 16);

// mlx5_ifc.h teardown_hca_in_bits (16 B). profile = TeardownProfile.
struct teardown_hca_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<teardown_hca_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F profile{0x50, 16};
};
static_assert(teardown_hca_in::kBits / 8 == 16);
static_assert(teardown_hca_in::profile.off / 8 == 10);

// mlx5_ifc.h teardown_hca_out_bits (16 B). state: result of a FORCE_CLOSE
// (0 success, 1 fail: MLX5_TEARDOWN_HCA_OUT_FORCE_STATE_*).
struct teardown_hca_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<teardown_hca_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F state{0x7f, 1};
};
static_assert(teardown_hca_out::kBits / 8 == 16);
static_assert(teardown_hca_out::state.end() == teardown_hca_out::kBits);

// mlx5_ifc.h access_register_in_bits (16 B + register data). op_mod =
// AccessRegOpMod, register_id = RegId.
struct access_register_in {
  static constexpr uint32_t kBits = 0x80;  // fixed part; register_data[] follows
  using F = Field<access_register_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F register_id{0x50, 16};
  static constexpr F argument{0x60, 32};
  static constexpr Array<access_register_in> register_data{0x80, 32, 0};
};
static_assert(access_register_in::kBits / 8 == 16);
static_assert(access_register_in::register_id.off / 8 == 10);
static_assert(access_register_in::argument.off / 8 == 12);
static_assert(access_register_in::register_data.byte_off(0) == 16);

// mlx5_ifc.h access_register_out_bits (16 B + register data).
struct access_register_out {
  static constexpr uint32_t kBits = 0x80;  // fixed part; register_data[] follows
  using F = Field<access_register_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Array<access_register_out> register_data{0x80, 32, 0};
};
static_assert(access_register_out::kBits / 8 == 16);

// mlx5_ifc.h register_host_endianness_bits (16 B): the HOST_ENDIANNESS
// register (RegId 0x7004) carried in register_data. he = 1 tells firmware the
// host is big-endian (device.h MLX5_SET_HOST_ENDIANNESS: 0 on little-endian
// hosts, 0x80 in the first byte on big-endian ones).
struct register_host_endianness {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<register_host_endianness>;
  static constexpr F he{0x0, 1};
};
static_assert(register_host_endianness::kBits / 8 == 16);

// The ACCESS_REG input/output sizes of a HOST_ENDIANNESS access.
inline constexpr uint32_t kHostEndiannessRegLen =
    access_register_in::kBits / 8 + register_host_endianness::kBits / 8;

// mlx5_ifc.h query_adapter_in_bits (16 B).
struct query_adapter_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_adapter_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
};
static_assert(query_adapter_in::kBits / 8 == 16);

// mlx5_ifc.h query_adapter_param_block_bits (256 B): vendor ids, the
// vendor-specific data (VSD) and the board's PSID (16 ASCII bytes).
struct query_adapter_param_block {
  static constexpr uint32_t kBits = 0x800;
  using F = Field<query_adapter_param_block>;
  static constexpr F ieee_vendor_id{0xc8, 24};
  static constexpr F vsd_vendor_id{0xf0, 16};
  static constexpr Bytes<query_adapter_param_block> vsd{0x100, 208 * 8};
  static constexpr Bytes<query_adapter_param_block> vsd_contd_psid{0x780, 16 * 8};
};
static_assert(query_adapter_param_block::kBits / 8 == 256);
static_assert(query_adapter_param_block::vsd.byte_off() == 32);
static_assert(query_adapter_param_block::vsd_contd_psid.byte_off() == 240);
static_assert(query_adapter_param_block::vsd_contd_psid.end() == query_adapter_param_block::kBits);

// mlx5_ifc.h query_adapter_out_bits (272 B).
struct query_adapter_out {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<query_adapter_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_adapter_out, query_adapter_param_block> query_adapter_struct{0x80};
};
static_assert(query_adapter_out::kBits / 8 == 272);
static_assert(query_adapter_out::query_adapter_struct.off / 8 == 16);
static_assert(query_adapter_out::query_adapter_struct.end() == query_adapter_out::kBits);

// mlx5_ifc.h set_driver_version_in_bits (80 B): a NUL-padded ASCII string.
struct set_driver_version_in {
  static constexpr uint32_t kBits = 0x280;
  using F = Field<set_driver_version_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr Bytes<set_driver_version_in> driver_version{0x80, 64 * 8};
};
static_assert(set_driver_version_in::kBits / 8 == 80);
static_assert(set_driver_version_in::driver_version.byte_off() == 16);

// mlx5_ifc.h set_driver_version_out_bits (16 B).
struct set_driver_version_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<set_driver_version_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(set_driver_version_out::kBits / 8 == 16);

// mlx5_ifc.h nop_in_bits (16 B).
struct nop_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<nop_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
};
static_assert(nop_in::kBits / 8 == 16);

// mlx5_ifc.h nop_out_bits (16 B).
struct nop_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<nop_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(nop_out::kBits / 8 == 16);

}  // namespace kbv::prm
