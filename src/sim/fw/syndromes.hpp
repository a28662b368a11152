// SPDX-License-Identifier: BSD-3-Clause
//
// Syndromes the model's firmware writes into mbox_out.syndrome.
//
// The PRM gives every failing check of a command a 32-bit syndrome that
// identifies the check (mlx5_ifc.h mbox_out_bits.syndrome; the kernel prints it
// beside the status, cmd.c mlx5_cmd_out_err). Real firmware's values are not
// public, so the model uses its own scheme, stable and documented here:
//
//   syndrome = opcode << 16 | check      for a check inside one command;
//   syndrome = 0x0000'00nn               for the generic dispatch checks below.
//
// Every constant is nonzero and distinct; tests match on them, a driver log
// shows which check refused the command.
//
// Threading: constants only.
#pragma once

#include "hca/prm/opcodes.hpp"

#include <cstdint>

namespace kbv::sim::fw::synd {

constexpr uint32_t at(prm::Opcode op, uint16_t check) {
  return static_cast<uint32_t>(prm::to_u16(op)) << 16 | check;
}

// ---- generic dispatch (firmware.cpp / registry.cpp) ----
inline constexpr uint32_t kUnknownOpcode = 0x01;   // BAD_OP: no handler for the opcode
inline constexpr uint32_t kInputTooShort = 0x02;   // BAD_INPUT_LEN: inlen < the command's minimum
inline constexpr uint32_t kOutputTooShort = 0x03;  // BAD_OUTPUT_LEN: outlen < the minimum
inline constexpr uint32_t kBadOpMod = 0x04;        // BAD_PARAM: op_mod not defined for the opcode
inline constexpr uint32_t kNotEnabled = 0x05;      // BAD_SYS_STATE: before ENABLE_HCA
inline constexpr uint32_t kNotInitialized = 0x06;  // BAD_SYS_STATE: before INIT_HCA
inline constexpr uint32_t kInjected = 0x07;        // default syndrome of an injected failure
inline constexpr uint32_t kBadUid = 0x09;          // BAD_PARAM: uid != 0 (no DEVX user contexts)

// ---- ENABLE_HCA / DISABLE_HCA ----
inline constexpr uint32_t kEnableTwice = at(prm::Opcode::ENABLE_HCA, 1);
inline constexpr uint32_t kEnableFunctionId = at(prm::Opcode::ENABLE_HCA, 2);
inline constexpr uint32_t kDisableNotEnabled = at(prm::Opcode::DISABLE_HCA, 1);
inline constexpr uint32_t kDisableInitialized = at(prm::Opcode::DISABLE_HCA, 2);
inline constexpr uint32_t kDisableFunctionId = at(prm::Opcode::DISABLE_HCA, 3);

// ---- SET_ISSI ----
inline constexpr uint32_t kIssiUnsupported = at(prm::Opcode::SET_ISSI, 1);
inline constexpr uint32_t kIssiAfterInit = at(prm::Opcode::SET_ISSI, 2);

// ---- QUERY_PAGES / MANAGE_PAGES ----
inline constexpr uint32_t kQueryPagesFunctionId = at(prm::Opcode::QUERY_PAGES, 1);
inline constexpr uint32_t kManagePagesFunctionId = at(prm::Opcode::MANAGE_PAGES, 1);
inline constexpr uint32_t kPasTooShort = at(prm::Opcode::MANAGE_PAGES, 2);  // inlen < n pas
inline constexpr uint32_t kPageMisaligned = at(prm::Opcode::MANAGE_PAGES, 3);
inline constexpr uint32_t kPageNotMapped = at(prm::Opcode::MANAGE_PAGES, 4);
inline constexpr uint32_t kPageDuplicate = at(prm::Opcode::MANAGE_PAGES, 5);
inline constexpr uint32_t kPagesLimit = at(prm::Opcode::MANAGE_PAGES, 6);
inline constexpr uint32_t kTakeOutTooShort = at(prm::Opcode::MANAGE_PAGES, 7);

// ---- ACCESS_REG ----
inline constexpr uint32_t kRegUnsupported = at(prm::Opcode::ACCESS_REG, 1);
inline constexpr uint32_t kRegBadEndianness = at(prm::Opcode::ACCESS_REG, 2);
inline constexpr uint32_t kRegDataShort = at(prm::Opcode::ACCESS_REG, 3);

// ---- QUERY_HCA_CAP / SET_HCA_CAP ----
inline constexpr uint32_t kCapTypeUnsupported = at(prm::Opcode::QUERY_HCA_CAP, 1);
inline constexpr uint32_t kSetCapTypeUnsupported = at(prm::Opcode::SET_HCA_CAP, 1);
inline constexpr uint32_t kSetCapAfterInit = at(prm::Opcode::SET_HCA_CAP, 2);
inline constexpr uint32_t kSetCapAboveMax = at(prm::Opcode::SET_HCA_CAP, 3);
inline constexpr uint32_t kSetCapBadValue = at(prm::Opcode::SET_HCA_CAP, 4);

// ---- INIT_HCA / TEARDOWN_HCA ----
inline constexpr uint32_t kInitTwice = at(prm::Opcode::INIT_HCA, 1);
// SET_DRIVER_VERSION: a byte that is neither printable ASCII nor NUL padding.
inline constexpr uint32_t kDriverVersionChars = at(prm::Opcode::SET_DRIVER_VERSION, 1);
inline constexpr uint32_t kInitNoBootPages = at(prm::Opcode::INIT_HCA, 2);
inline constexpr uint32_t kInitNoInitPages = at(prm::Opcode::INIT_HCA, 3);
inline constexpr uint32_t kInitIssi = at(prm::Opcode::INIT_HCA, 4);
inline constexpr uint32_t kTeardownProfile = at(prm::Opcode::TEARDOWN_HCA, 1);

// ---- ALLOC_UAR / DEALLOC_UAR ----
inline constexpr uint32_t kUarExhausted = at(prm::Opcode::ALLOC_UAR, 1);
inline constexpr uint32_t kUarOutOfRange = at(prm::Opcode::DEALLOC_UAR, 1);
inline constexpr uint32_t kUarNotAllocated = at(prm::Opcode::DEALLOC_UAR, 2);
inline constexpr uint32_t kUarInUse = at(prm::Opcode::DEALLOC_UAR, 3);
// DEALLOC_UAR of a UAR page that a CQ, QP or SRQ still rings.
inline constexpr uint32_t kUarInUseByObject = at(prm::Opcode::DEALLOC_UAR, 4);

// ---- CREATE_EQ / DESTROY_EQ / QUERY_EQ / GEN_EQE ----
inline constexpr uint32_t kEqExhausted = at(prm::Opcode::CREATE_EQ, 1);
inline constexpr uint32_t kEqLogSize = at(prm::Opcode::CREATE_EQ, 2);
inline constexpr uint32_t kEqUarNotAllocated = at(prm::Opcode::CREATE_EQ, 3);
inline constexpr uint32_t kEqPasTooShort = at(prm::Opcode::CREATE_EQ, 4);
inline constexpr uint32_t kEqPasMisaligned = at(prm::Opcode::CREATE_EQ, 5);
inline constexpr uint32_t kEqPasNotMapped = at(prm::Opcode::CREATE_EQ, 6);
inline constexpr uint32_t kEqPageOffset = at(prm::Opcode::CREATE_EQ, 8);
inline constexpr uint32_t kEqLogPageSize = at(prm::Opcode::CREATE_EQ, 10);
inline constexpr uint32_t kDestroyEqUnknown = at(prm::Opcode::DESTROY_EQ, 1);
// DESTROY_EQ of an EQ that a CQ still reports to.
inline constexpr uint32_t kDestroyEqInUse = at(prm::Opcode::DESTROY_EQ, 2);
inline constexpr uint32_t kQueryEqUnknown = at(prm::Opcode::QUERY_EQ, 1);
inline constexpr uint32_t kGenEqeUnknown = at(prm::Opcode::GEN_EQE, 1);  // no such EQ
inline constexpr uint32_t kGenEqeNotWritten =
    at(prm::Opcode::GEN_EQE, 2);  // EQ full / buffer fault

}  // namespace kbv::sim::fw::synd
