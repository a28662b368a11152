// SPDX-License-Identifier: BSD-3-Clause
//
// Memory keys: the memory key context (mkc) and CREATE_MKEY / QUERY_MKEY /
// DESTROY_MKEY (0x200 / 0x201 / 0x202), plus the MTT entry that follows
// create_mkey_in when access_mode is MTT.
//
// Source: Linux 6.1 include/linux/mlx5/mlx5_ifc.h, the structures named above
// each table (bit offsets and widths; reserved members are left out);
// access-mode values from mlx5_ifc.h enum MLX5_MKC_ACCESS_MODE_*; the
// mkey <-> mkey_index relation from include/linux/mlx5/driver.h
// (mlx5_mkey_to_idx / mlx5_idx_to_mkey); PRM (ConnectX-4 Rev 0.40)
// "Memory Key Context (MKC)", "CREATE_MKEY".
//
// Shapes and units:
//   * a memory key (lkey/rkey) is mkey_index << 8 | mkey_7_0: firmware picks
//     the 24-bit index (create_mkey_out.mkey_index), software the low byte
//     (mkc.mkey_7_0, a "variant" tag);
//   * the access mode is 5 bits split in mkc: access_mode_4_2 holds bits 4..2
//     and access_mode_1_0 bits 1..0 (see set_access_mode below);
//   * start_addr and len are bytes (len is ignored when length64 = 1, which
//     means a 2^64-byte region); log_page_size is log2 of the translation page
//     in bytes (12 = 4 KiB);
//   * translations_octword_size counts 16-byte octwords of translation
//     entries: MTT entries are 8 bytes, so it is (number of MTTs + 1) / 2,
//     and create_mkey_in.translations_octword_actual_size says how many of
//     them follow in klm_pas_mtt;
//   * klm_pas_mtt is a variable-length tail at byte 272 of create_mkey_in; the
//     kernel declares it in 32-bit units, kbv also gives the same bytes as an
//     array of 64-bit mtt entries (mtt_array, elements of struct mtt).
//
// Threading: constants and constexpr tables only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// mkc access modes (mlx5_ifc.h enum MLX5_MKC_ACCESS_MODE_*; PRM "MKC").
namespace mkc_access_mode {
inline constexpr uint32_t kPa = 0x0;     // physical addresses, no translation
inline constexpr uint32_t kMtt = 0x1;    // memory translation table (pages)
inline constexpr uint32_t kKlms = 0x2;   // KLM list (indirect: key, length, va)
inline constexpr uint32_t kKsm = 0x3;    // fixed-size KLM entries
inline constexpr uint32_t kSwIcm = 0x4;  // steering ICM memory
inline constexpr uint32_t kMemic = 0x5;  // device on-chip memory
}  // namespace mkc_access_mode

// mkey <-> mkey_index (driver.h mlx5_idx_to_mkey / mlx5_mkey_to_idx).
constexpr uint32_t mkey_to_index(uint32_t mkey) { return mkey >> 8; }
constexpr uint32_t mkey_from_index(uint32_t mkey_index, uint8_t mkey_7_0) {
  return (mkey_index << 8) | mkey_7_0;
}

// mlx5_ifc.h: struct mlx5_ifc_mkc_bits (0x200 bits, 64 bytes)
struct mkc {
  static constexpr uint32_t kBits = 0x200;
  using F = Field<mkc>;
  // 1: the key is free (not valid); software writes 0 to create a usable key
  static constexpr F free{0x1, 1};
  // bits 4..2 of the access mode (mkc_access_mode)
  static constexpr F access_mode_4_2{0x3, 3};
  static constexpr F relaxed_ordering_write{0xd, 1};
  static constexpr F small_fence_on_rdma_read_response{0xf, 1};
  static constexpr F umr_en{0x10, 1};
  // remote atomic allowed
  static constexpr F a{0x11, 1};
  // remote write allowed
  static constexpr F rw{0x12, 1};
  // remote read allowed
  static constexpr F rr{0x13, 1};
  // local write allowed
  static constexpr F lw{0x14, 1};
  // local read allowed
  static constexpr F lr{0x15, 1};
  // bits 1..0 of the access mode
  static constexpr F access_mode_1_0{0x16, 2};
  static constexpr F ma_translation_mode{0x1a, 2};
  // 0xFFFFFF: the key is not bound to one QP
  static constexpr F qpn{0x20, 24};
  // variant byte, the low 8 bits of the lkey/rkey
  static constexpr F mkey_7_0{0x38, 8};
  // 1: the region is 2^64 bytes and len is ignored
  static constexpr F length64{0x60, 1};
  static constexpr F bsf_en{0x61, 1};
  static constexpr F sync_umr{0x62, 1};
  static constexpr F expected_sigerr_count{0x65, 1};
  static constexpr F en_rinval{0x67, 1};
  static constexpr F pd{0x68, 24};
  // virtual address of byte 0 of the region
  static constexpr F start_addr{0x80, 64};
  // region length in bytes
  static constexpr F len{0xc0, 64};
  static constexpr F bsf_octword_size{0x100, 32};
  // 16-byte units of translation entries (MTT: 2 per octword)
  static constexpr F translations_octword_size{0x1a0, 32};
  static constexpr F relaxed_ordering_read{0x1d9, 1};
  // log2(translation page size in bytes)
  static constexpr F log_page_size{0x1db, 5};
};
static_assert(mkc::kBits == 0x200 && mkc::kBits / 8 == 64);

// Store a 5-bit access mode in mkc's two fields (mlx5_ifc.h mkc:
// access_mode_4_2 = mode >> 2, access_mode_1_0 = mode & 3).
inline void set_access_mode(Ref<mkc> c, uint32_t mode) {
  c.set(mkc::access_mode_1_0, mode & 0x3);
  c.set(mkc::access_mode_4_2, (mode >> 2) & 0x7);
}
inline uint32_t get_access_mode(CRef<mkc> c) {
  return static_cast<uint32_t>(c.get(mkc::access_mode_4_2) << 2 | c.get(mkc::access_mode_1_0));
}

// mlx5_ifc.h: struct mlx5_ifc_mtt_bits (0x40 bits, 8 bytes)
struct mtt {
  static constexpr uint32_t kBits = 0x40;
  using F = Field<mtt>;
  // bits 63..32 of the page address (IOVA)
  static constexpr F ptag_63_32{0x0, 32};
  // bits 31..8 of the page address
  static constexpr F ptag_31_8{0x20, 24};
  // device may write the page
  static constexpr F wr_en{0x3e, 1};
  // device may read the page
  static constexpr F rd_en{0x3f, 1};
};
static_assert(mtt::kBits == 0x40 && mtt::kBits / 8 == 8);

// An MTT entry as one big-endian 64-bit word: the page address with its low
// 8 bits replaced by the enable flags (mlx5_ifc.h mtt: wr_en is bit 1, rd_en
// bit 0 of the low byte).
constexpr uint64_t mtt_entry(uint64_t page_addr, bool rd_en, bool wr_en) {
  return (page_addr & ~0xFFull) | (wr_en ? 0x2u : 0u) | (rd_en ? 0x1u : 0u);
}

// mlx5_ifc.h: struct mlx5_ifc_create_mkey_in_bits (0x880 bits, 272 bytes)
struct create_mkey_in {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<create_mkey_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // on-demand paging access
  static constexpr F pg_access{0x60, 1};
  // translations come from a umem (DEVX), not klm_pas_mtt
  static constexpr F mkey_umem_valid{0x61, 1};
  static constexpr Sub<create_mkey_in, prm::mkc> memory_key_mkey_entry{0x80};
  // 16-byte octwords of klm_pas_mtt that follow
  static constexpr F translations_octword_actual_size{0x300, 32};
  // variable tail, 32-bit units (kernel declaration)
  static constexpr Array<create_mkey_in> klm_pas_mtt{0x880, 32, 0};
  // The same tail as 64-bit entries of struct mtt (element i = MTT i).
  static constexpr Array<create_mkey_in> mtt_array{0x880, 64, 0};
};
static_assert(create_mkey_in::kBits == 0x880 && create_mkey_in::kBits / 8 == 272);
static_assert(create_mkey_in::memory_key_mkey_entry.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_create_mkey_out_bits (0x80 bits, 16 bytes)
struct create_mkey_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<create_mkey_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F mkey_index{0x48, 24};
};
static_assert(create_mkey_out::kBits == 0x80 && create_mkey_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_destroy_mkey_in_bits (0x80 bits, 16 bytes)
struct destroy_mkey_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_mkey_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F mkey_index{0x48, 24};
};
static_assert(destroy_mkey_in::kBits == 0x80 && destroy_mkey_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_destroy_mkey_out_bits (0x80 bits, 16 bytes)
struct destroy_mkey_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_mkey_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(destroy_mkey_out::kBits == 0x80 && destroy_mkey_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_mkey_in_bits (0x80 bits, 16 bytes)
struct query_mkey_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_mkey_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F mkey_index{0x48, 24};
  static constexpr F pg_access{0x60, 1};
};
static_assert(query_mkey_in::kBits == 0x80 && query_mkey_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_mkey_out_bits (0x980 bits, 304 bytes)
struct query_mkey_out {
  static constexpr uint32_t kBits = 0x980;
  using F = Field<query_mkey_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_mkey_out, prm::mkc> memory_key_mkey_entry{0x80};
  // first 16 bytes of the translation entries (MTT 0 and 1)
  static constexpr Bytes<query_mkey_out> bsf0_klm0_pas_mtt0_1{0x880, 128};
  // next 16 bytes (MTT 2 and 3)
  static constexpr Bytes<query_mkey_out> bsf1_klm1_pas_mtt2_3{0x900, 128};
};
static_assert(query_mkey_out::kBits == 0x980 && query_mkey_out::kBits / 8 == 304);
static_assert(query_mkey_out::memory_key_mkey_entry.off == 0x80);

// Key offsets (mlx5_ifc.h; reserved_at_<hex> names confirm the sums).
static_assert(mkc::qpn.off == 0x20 && mkc::mkey_7_0.off == 0x38);
static_assert(mkc::pd.off == 0x68 && mkc::start_addr.off == 0x80 && mkc::len.off == 0xc0);
static_assert(mkc::translations_octword_size.off == 0x1a0 && mkc::log_page_size.off == 0x1db);
static_assert(create_mkey_in::memory_key_mkey_entry.end() == 0x280);
static_assert(create_mkey_in::translations_octword_actual_size.off == 0x300);
static_assert(create_mkey_in::klm_pas_mtt.off == create_mkey_in::kBits);  // byte 272
static_assert(create_mkey_in::mtt_array.byte_off(1) == 280);
static_assert(create_mkey_out::mkey_index.off == 0x48);
static_assert(query_mkey_out::memory_key_mkey_entry.end() == 0x280);
static_assert(query_mkey_out::bsf0_klm0_pas_mtt0_1.byte_off() == 272);
static_assert(mtt::kBits == 64 && mtt::rd_en.off == 0x3f);

}  // namespace kbv::prm
