// SPDX-License-Identifier: BSD-3-Clause
//
// SendQueue: the send half of the mlx5 data path — builds send WQEs in place
// in a QP's send ring and rings the send doorbell. Work requests come as an
// array (docs/DESIGN.md "The fast path"); one doorbell per call.
//
// WQE layout (rdma-core mlx5dv.h, included, not redefined; docs/PRM.md "Data
// path"): 64-byte basic blocks (MLX5_SEND_WQE_BB); every WQE starts with a
// mlx5_wqe_ctrl_seg:
//   opmod_idx_opcode = wqe_index << 8 | MLX5_OPCODE_*   (wqe_index: the
//                      producer counter in basic blocks, low 16 bits)
//   qpn_ds           = qpn << 8 | WQE size in 16-byte units
//   fm_ce_se         = MLX5_WQE_CTRL_FENCE | MLX5_WQE_CTRL_CQ_UPDATE |
//                      MLX5_WQE_CTRL_SOLICITED as the flags ask
//   imm              = immediate data (SEND_IMM / RDMA_WRITE_IMM)
// followed by, per opcode (rdma-core providers/mlx5/qp.c _mlx5_post_send):
//   UD SEND*        : mlx5_wqe_datagram_seg (48 B: the Ah's mlx5_wqe_av with
//                     dqp_dct = remote QPN | MLX5_EXTENDED_UD_AV and the
//                     Q_Key of the work request)
//   RDMA_WRITE*/READ: mlx5_wqe_raddr_seg (remote address, rkey)
//   ATOMIC_CS/FA    : mlx5_wqe_raddr_seg + mlx5_wqe_atomic_seg (CS: swap_add
//                     = swap, compare = compare_add; FA: swap_add =
//                     compare_add, compare = 0)
//   then the data   : one mlx5_wqe_data_seg per SGE of non-zero length (a
//                     zero byte_count would mean 2 GiB, so rdma-core skips
//                     them), or with kInline one mlx5_wqe_inl_data_seg
//                     (byte_count = total | MLX5_INLINE_SEG) + the bytes,
//                     zero-padded to 16 B (nothing for 0 bytes).
// A WQE that runs past the ring end continues at the ring start (segments
// are 16 B and the ring is whole basic blocks, so only the 48-B datagram
// segment and inline data are split, at 16-B boundaries).
//
// Checks, in order, per work request, before anything of it is written:
// opcode not valid for the QP type (UD: SEND/SEND_IMM; UC: + RDMA_WRITE*;
// RC: all) -> KBV_ERR_INVALID_WR_TYPE; sge count above max_send_sge ->
// KBV_ERR_TOO_MANY_SGE; inline total above max_inline_data ->
// KBV_ERR_INLINE_TOO_LARGE; inline on READ/atomics, an atomic whose list is
// not one 8-byte SGE, inline bytes at CPU address 0, a UD request without
// an Ah or with a QPN wider than 24 bits -> KBV_ERR_INVALID_ARGUMENT; not
// enough free basic blocks -> KBV_ERR_QUEUE_FULL. The first refused request
// stops the batch: the requests before it are posted (and the doorbell rung
// for them), it and those after it are not, the ring past the last posted
// WQE is untouched, *bad_index names it (as ibv_post_send's bad_wr).
//
// Doorbell (docs/PRM.md "Data path"; rdma-core qp.c post_send_db): after the
// WQEs, udma_to_device_barrier(); doorbell record dbrec[1] = send counter
// (basic blocks, low 16 bits, big-endian); then the UAR write: a single
// WQE that fits in half the BlueFlame register is copied whole
// (Bar::bf_copy64 per basic block), otherwise the first 8 bytes of the last
// WQE's control segment go to the BlueFlame register as one 64-bit write.
// Successive doorbells alternate between the register's two halves
// (bf_offset, bf_offset + bf_reg_size / 2).
//
// Completion: each WQE's first basic block slot remembers the wr_id and the
// producer counter after the WQE; complete(wqe_counter) (called by the CQ
// poller with a requester CQE's wqe_counter) returns that wr_id and frees
// every basic block up to the end of that WQE (unsignaled WQEs before it
// included, as the send queue is completed in order).
//
// Building: the WQE is the composition of the per-segment setters of
// dp/wqe.hpp (control, datagram, remote address, atomic, data pointer,
// inline), each citing its layout; sq_post.hpp holds the post loop.
//
// Specialisation: the QP type is fixed at setup; post() switches once per
// call on it to a per-type instantiation (check, build and doorbell
// inlined; a direct, predictable branch rather than an indirect call;
// docs/STYLE.md "fast path specialised once"). The loop reads work requests
// through a field adapter (SendWrFields below for SendWr; the verbs layer
// has one for kbv_send_wr_t), so a caller's own request type is built from
// directly, with no intermediate copy. Statuses on the way are plain
// kbv_status_t values. No locks, no allocation after create().
// Threading: one thread per SendQueue (the QP's owner).
#pragma once

#include <infiniband/mlx5dv.h>

#include <kbv/status.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hca/objects/ah.hpp"
#include "platform/mmio.hpp"

namespace kbv::hca {

class Hca;
class Qp;
struct QpConfig;

// One scatter/gather entry: a registered buffer (lkey) at addr (the IOVA /
// virtual address the memory key covers). For inline sends addr is the CPU
// address of the bytes to copy.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

enum class WrOpcode : uint8_t {
  kSend,
  kSendImm,
  kRdmaWrite,
  kRdmaWriteImm,
  kRdmaRead,
  kAtomicCs,
  kAtomicFa,
};

namespace send_flags {
inline constexpr uint32_t kSignaled = 1u << 0;   // generate a CQE
inline constexpr uint32_t kSolicited = 1u << 1;  // solicited event at the responder
inline constexpr uint32_t kFence = 1u << 2;      // wait for earlier READs/atomics
inline constexpr uint32_t kInline = 1u << 3;     // copy the data into the WQE
}  // namespace send_flags

struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t flags = 0;  // send_flags
  std::span<const Sge> sg{};
  uint32_t imm = 0;  // CPU order; sent big-endian (SEND_IMM, RDMA_WRITE_IMM)
  // RDMA and atomics: the remote buffer.
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  // Atomics (IBTA 9.4.5): CS compares with compare_add and writes swap;
  // FA adds compare_add.
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // UD: the address handle, destination QPN (24 bits) and Q_Key.
  const Ah* ah = nullptr;
  uint32_t remote_qpn = 0;
  uint32_t q_key = 0;
};

// How the post loop reads a work request (the "field adapter"): a type A
// with `using Wr`, the static accessors below (CPU-order values; opcode a
// WrOpcode value, sg an array of num_sge entries laid out as Sge), and
//   template <bool Ud> kbv_status_t prepare(const Wr&, const Ah** ah) const
// which runs first for each request: what only the caller's type can check
// (an error refuses the request like the queue's own checks) and, for UD
// (Ud true), the request's address handle into *ah. SendWrFields reads a
// SendWr; src/verbs/fast_path.cpp has one for kbv_send_wr_t.
struct SendWrFields {
  using Wr = SendWr;
  template <bool Ud>
  kbv_status_t prepare(const Wr& w, const Ah** ah) const {
    if constexpr (Ud) *ah = w.ah;
    return KBV_SUCCESS;
  }
  static uint64_t wr_id(const Wr& w) { return w.wr_id; }
  static uint32_t opcode(const Wr& w) { return static_cast<uint32_t>(w.opcode); }
  static uint32_t flags(const Wr& w) { return w.flags; }
  static const Sge* sg(const Wr& w) { return w.sg.data(); }
  static size_t num_sge(const Wr& w) { return w.sg.size(); }
  static uint32_t imm(const Wr& w) { return w.imm; }
  static uint64_t remote_addr(const Wr& w) { return w.remote_addr; }
  static uint32_t rkey(const Wr& w) { return w.rkey; }
  static uint64_t compare_add(const Wr& w) { return w.compare_add; }
  static uint64_t swap(const Wr& w) { return w.swap; }
  static uint32_t remote_qpn(const Wr& w) { return w.remote_qpn; }
  static uint32_t q_key(const Wr& w) { return w.q_key; }
};

// Where the send ring and its doorbells are; for_qp() fills it from a Qp.
struct SqConfig {
  std::byte* ring = nullptr;           // the send ring (CPU address), 64 << log_blocks bytes
  uint32_t log_blocks = 0;             // log2 of the ring size in basic blocks (1..16)
  volatile uint32_t* dbrec = nullptr;  // the QP doorbell record ([1] = send counter)
  const platform::Bar* bar =
      nullptr;  // BAR0 (create() keeps a copy: a view of a mapping that outlives the queue)
  uint64_t bf_offset = 0;    // BAR0 offset of the BlueFlame register (UAR + 0x800 + ...)
  uint32_t bf_reg_size = 0;  // bytes (both halves); 0: doorbell only, one address
  bool bf_copy = false;      // BlueFlame copies allowed (caps.bf)
  uint32_t qpn = 0;
  uint32_t st = 0;  // prm::qpc_st: RC, UC or UD
  uint32_t max_sge = 1;
  uint32_t max_inline = 0;
  bool sig_all = false;  // every WQE asks for a CQE
};

class SendQueue {
 public:
  // KBV_ERR_INVALID_ARGUMENT for a missing ring/record/BAR, a ring above
  // 2^16 basic blocks, a BlueFlame register outside the BAR, not a power of
  // two >= 16 bytes, or (with bf_copy) not 64-byte aligned;
  // KBV_ERR_LIMIT_EXCEEDED when the largest WQE max_sge / max_inline allow
  // is above 63 16-byte units (the 6-bit ds) or larger than the ring; KBV_ERR_NOT_SUPPORTED for a
  // QP type other than RC/UC/UD. Allocates the per-slot completion arrays.
  static Result<SendQueue> create(const SqConfig& cfg);
  // The send ring of `qp` (created with `qp_cfg`) and BlueFlame register
  // `bf_index` (0..3, prm::kBfRegsPerUar) of the Hca's UAR.
  static Result<SendQueue> for_qp(Hca& hca, const Qp& qp, const QpConfig& qp_cfg,
                                  uint32_t bf_index = 0, bool sig_all = false);

  SendQueue(SendQueue&&) noexcept = default;
  SendQueue& operator=(SendQueue&&) noexcept = default;

  // Posts wrs in order (see the header comment). Success: all posted. On a
  // refusal the status, and *bad_index (when non-null) = the index of the
  // refused request.
  Status post(std::span<const SendWr> wrs, size_t* bad_index = nullptr) {
    return post(wrs.data(), wrs.size(), bad_index);
  }
  kbv_status_t post(const SendWr* wrs, size_t n, size_t* bad_index) {
    switch (kind_) {
      case Kind::kRc: return post_rc(wrs, n, bad_index);
      case Kind::kUc: return post_uc(wrs, n, bad_index);
      default: return post_ud(wrs, n, bad_index);
    }
  }
  // The same for requests of the adapter A's type (see SendWrFields);
  // defined in dp/sq_post.hpp, inlined into the caller.
  template <class A>
  kbv_status_t post(const A& a, const typename A::Wr* wrs, size_t n, size_t* bad_index);
  // One request of the common shape (sq_post.hpp simple(): one SGE, SEND* /
  // RDMA_WRITE* / RDMA_READ or short inline, RC or UC) with room: built and
  // the doorbell rung, true. Anything else (another shape, a request the
  // adapter's prepare() or the queue's checks refuse, a full ring): false
  // with nothing written; post() then gives the request its status. Inline
  // (dp/sq_post.hpp): the public kbv_post_send's straight line.
  template <class A>
  bool post_one(const A& a, const typename A::Wr& wr);

  // Requester completion of the WQE at wqe_counter: its wr_id; frees the
  // ring up to the end of that WQE. A counter outside the WQEs in flight (a
  // device that completes what was never posted, or twice) frees nothing:
  // ring space the device may still read is never handed out again
  // (tests/fuzz cq_poll).
  uint64_t complete(uint16_t wqe_counter) {
    const Slot& s = slots_[wqe_counter & mask_];
    if (s.next_pc - tail_ - 1 < pc_ - tail_) [[likely]]
      tail_ = s.next_pc;
    return s.wr_id;
  }

  // The device failed (health syndrome, removal): the wr_id of the oldest
  // WQE still in flight, which is then completed in software (as the
  // kernel's mlx5_ib_poll_sw_comp flushes a dead device's queues); false
  // when none is left.
  bool flush_one(uint64_t* wr_id) {
    if (tail_ == pc_) return false;
    const Slot& s = slots_[tail_ & mask_];
    *wr_id = s.wr_id;
    // A slot whose end is not ahead of the tail (never a WQE start): stop.
    if (s.next_pc - tail_ - 1 >= pc_ - tail_) {
      tail_ = pc_;
      return true;
    }
    tail_ = s.next_pc;
    return true;
  }

  uint32_t qpn() const { return cfg_.qpn; }
  uint32_t blocks() const { return mask_ + 1; }
  uint32_t pc() const { return pc_; }  // producer counter, basic blocks
  uint32_t free_blocks() const { return blocks() - (pc_ - tail_); }
  uint64_t next_bf_offset() const { return cfg_.bf_offset + bf_cur_; }

 private:
  struct Slot {
    uint64_t wr_id;
    uint32_t next_pc;
  };
  enum class Kind : uint8_t { kRc, kUc, kUd };

  SendQueue() = default;
  kbv_status_t post_rc(const SendWr* wrs, size_t n, size_t* bad_index);
  kbv_status_t post_uc(const SendWr* wrs, size_t n, size_t* bad_index);
  kbv_status_t post_ud(const SendWr* wrs, size_t n, size_t* bad_index);
  // What check() learnt of a request, for build().
  struct Shape {
    uint32_t ds;          // WQE size, 16-byte units
    uint32_t inline_len;  // inline bytes (kInline), else 0
  };
  template <uint32_t St, class A>
  kbv_status_t post_wrs(const A& a, const typename A::Wr* wrs, size_t n, size_t* bad_index);
  template <uint32_t St, class A>
  kbv_status_t check(const typename A::Wr& wr, const Ah* ah, Shape* shape) const;
  template <uint32_t St, class A>
  void build(const typename A::Wr& wr, const Ah* ah, Shape shape);
  // The common shape (sq_post.hpp): one SGE (or short inline), no atomic, not UD.
  template <uint32_t St, class A>
  bool simple(const typename A::Wr& wr) const;
  template <class A>
  void build_simple(const typename A::Wr& wr);
  // simple<St>() with the QP type's part precomputed (simple_ops: 0 for UD).
  template <class A>
  static bool common_shape(const A& a, const typename A::Wr& wr, uint8_t simple_ops,
                           uint32_t max_inline);
  // The common shape's WQE at w (index pc) and its slot, from values the
  // caller holds in registers; the control segment's first word.
  template <class A>
  static uint64_t write_common(std::byte* w, Slot* slot, uint32_t pc, uint32_t qpn, uint8_t ce_all,
                               const typename A::Wr& wr);
  // An inline segment that runs past the ring end: built contiguously, then
  // copied unit by unit (rare; out of line).
  void put_wrapped_inline(size_t start, const Sge* sg, size_t n, uint32_t total);
  void refused(size_t i, kbv_status_t st) const;
  void ring_doorbell(uint32_t first_pc, uint32_t n, uint32_t last_pc);
  // The 16-byte unit i of the WQE starting at basic block pc.
  std::byte* unit(uint32_t pc, uint32_t i) const {
    return cfg_.ring + (((size_t{pc} << 6) + (size_t{i} << 4)) & ring_mask_);
  }

  SqConfig cfg_;
  // *cfg_.bar, copied (a plain view): the doorbell's address is one load
  // from the queue, not two.
  platform::Bar bar_;
  Kind kind_ = Kind::kRc;
  uint32_t mask_ = 0;     // blocks - 1
  size_t ring_mask_ = 0;  // ring bytes - 1
  uint32_t pc_ = 0;       // producer counter (basic blocks)
  uint32_t tail_ = 0;     // first basic block not yet completed
  uint32_t bf_half_ = 0;  // bytes; 0: one doorbell address
  uint32_t bf_cur_ = 0;   // 0 or bf_half_
  uint8_t ce_all_ = 0;    // MLX5_WQE_CTRL_CQ_UPDATE when sig_all
  // WrOpcode bits of the common shape post_one() builds: the opcodes the
  // QP type allows without an atomic segment; 0 for UD (a datagram
  // segment) and for max_sge 0.
  uint8_t simple_ops_ = 0;
  bool bf_one_ = false;      // a 64-byte WQE goes whole through the BlueFlame register
  std::vector<Slot> slots_;  // per basic block
};

}  // namespace kbv::hca
