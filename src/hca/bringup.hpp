// SPDX-License-Identifier: BSD-3-Clause
//
// Bringup and Teardown: the HCA initialisation and shutdown sequences as
// non-blocking state machines (docs/STYLE.md: "device open is a state machine
// driven by command completions"). Hca::poll() calls step(); each state
// either submits its command (and waits for the completion callback) or
// advances at once.
//
// Bring-up order (docs/PRM.md "Bring-up order"; rdma-core providers/mlx5/
// mlx5_vfio.c mlx5_vfio_setup_function; kernel main.c mlx5_function_setup):
//   kWaitInit        init_seg.initializing bit 31 clears (bounded by
//                    HcaConfig::init_timeout_ns -> KBV_ERR_DEVICE_NOT_READY;
//                    120 s, rdma-core mlx5_vfio FW_PRE_INIT_TIMEOUT_MILI /
//                    kernel FW_PRE_INIT_TIMEOUT; a synchronous wait polls it
//                    every 2 ms, FW_INIT_WAIT_MS, Hca::waiting_for_init)
//   kEnableHca       ENABLE_HCA
//   kQueryIssi       QUERY_ISSI (a firmware without it, BAD_OP, is ISSI 0)
//   kSetIssi         SET_ISSI 1 when supported; ISSI 0 only -> skipped;
//                    neither -> KBV_ERR_NOT_SUPPORTED
//   kBootPages       QUERY_PAGES boot -> MANAGE_PAGES
//   kHostEndianness  ACCESS_REG HOST_ENDIANNESS
//   kQueryCurCaps    QUERY_HCA_CAP general, current
//   kQueryMaxCaps    QUERY_HCA_CAP general, max
//   kSetCaps         SET_HCA_CAP general: the current block with
//                    cmdif_checksum = 0 (docs/PRM.md) and log_uar_page_sz = 0
//                    (4 KiB UAR pages; kernel handle_hca_cap)
//   kQueryCaps       QUERY_HCA_CAP general, current (what is now in effect)
//   kQueryRoceCaps   QUERY_HCA_CAP RoCE, current (when the device has RoCE)
//   kInitPages       QUERY_PAGES init -> MANAGE_PAGES
//   kInitHca         INIT_HCA
//   kEnableRoce      MODIFY_NIC_VPORT_CONTEXT roce_en = 1, on Ethernet ports
//                    with RoCE (docs/PRM.md step 10; caps port_type 1)
//   kAllocUar        ALLOC_UAR
//   kCreateAsyncEq   CREATE_EQ for command completions, page requests and
//                    device/QP/CQ/SRQ async events; armed; the command
//                    queue switches to completion by EQE
//   kCreateCompEq    CREATE_EQ for completion events (HcaConfig::create_comp_eq)
//   kDone / kFailed
//
// Teardown order (docs/PRM.md "Teardown"): destroy the completion EQ, switch the
// command queue back to polling, destroy the async EQ, DEALLOC_UAR,
// TEARDOWN_HCA (graceful), take every page back (PageManager::reclaim_all),
// DISABLE_HCA, then DeviceIo::disable_device(). Steps for objects that were never created are
// skipped; a failing step is logged and remembered, and the rest still run. With a failed (dead)
// command queue no command is sent.
//
// Threading: driven by Hca::poll (one thread).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <string_view>

namespace kbv::hca {

class Hca;

class Bringup {
 public:
  enum class State : uint8_t {
    kWaitInit,
    kEnableHca,
    kQueryIssi,
    kSetIssi,
    kBootPages,
    kHostEndianness,
    kQueryCurCaps,
    kQueryMaxCaps,
    kSetCaps,
    kQueryCaps,
    kQueryRoceCaps,
    kInitPages,
    kInitHca,
    kEnableRoce,
    kAllocUar,
    kCreateAsyncEq,
    kCreateCompEq,
    kDone,
    kFailed,
  };

  Bringup(Hca& hca, uint64_t now_ns);
  void step();
  bool done() const { return state_ == State::kDone || state_ == State::kFailed; }
  Status status() const { return state_ == State::kDone ? Status::ok() : status_; }
  State state() const { return state_; }
  bool waiting() const { return waiting_; }
  // How long `initializing` stayed set from the bring-up's start (kWaitInit
  // done; 0 before).
  uint64_t init_wait_ns() const { return init_wait_ns_; }
  // Ends the bring-up with `s` (device failure, teardown requested).
  void abort(Status s);
  static std::string_view state_name(State s);

 private:
  void run_state();
  void submitted(Status s);
  void completed(Status s, State next);
  void fail(Status s);
  void log_ready() const;

  Hca& h_;
  State state_ = State::kWaitInit;
  bool waiting_ = false;
  uint64_t start_ns_;
  uint64_t init_deadline_ns_;
  uint64_t init_wait_ns_ = 0;
  Status status_{KBV_PENDING};
};

class Teardown {
 public:
  enum class State : uint8_t {
    kDestroyCompEq,
    kDestroyAsyncEq,
    kDeallocUar,
    kTeardownHca,
    kReclaimPages,
    kDisableHca,
    kDone,
  };

  explicit Teardown(Hca& hca) : h_(hca) {}
  void step();
  // Every step ran and the device was disabled.
  bool done() const { return state_ == State::kDone && device_disabled_; }
  // First error met (teardown does not stop on errors).
  Status status() const { return first_error_; }
  State state() const { return state_; }
  static std::string_view state_name(State s);

 private:
  void run_state();
  void submitted(Status s, State next);
  void completed(Status s, State next);

  Hca& h_;
  State state_ = State::kDestroyCompEq;
  bool waiting_ = false;
  bool device_disabled_ = false;
  Status first_error_;
};

}  // namespace kbv::hca
