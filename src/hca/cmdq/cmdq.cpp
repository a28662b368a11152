// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmdq/cmdq.hpp"

#include <cstring>
#include <memory>
#include <new>

#include "common/log.hpp"
#include "hca/cmdq/cmd_trace.hpp"
#include "hca/io/reg.hpp"
#include "hca/prm/cmd_hdr.hpp"
#include "hca/prm/cmdq.hpp"
#include "hca/prm/init_seg.hpp"
#include "hca/prm/opcodes.hpp"

namespace kbv::hca {

using prm::cmd_layout;
using prm::init_seg;

namespace {
constexpr const char* kLog = "cmdq";

uint8_t xor8(const std::byte* p, size_t from, size_t to) {
  uint8_t x = 0;
  for (size_t i = from; i < to; ++i) x ^= static_cast<uint8_t>(p[i]);
  return x;
}

// kernel cmd.c calc_block_sig: the control part (after the 512 data bytes,
// up to ctrl_sig) and then the whole block up to sig.
void sign_block(std::byte* b) {
  using prm::cmd_prot_block;
  prm::Ref<cmd_prot_block> r(b);
  const size_t ctrl_from = cmd_prot_block::data.size();
  r.set(cmd_prot_block::ctrl_sig,
        static_cast<uint8_t>(~xor8(b, ctrl_from, cmd_prot_block::ctrl_sig.off / 8)));
  r.set(cmd_prot_block::sig, static_cast<uint8_t>(~xor8(b, 0, cmd_prot_block::sig.off / 8)));
}
// Inputs larger than this are refused: the largest PRM command input
// (CREATE_MKEY / CREATE_QP with a long pas[] list) stays far below it.
constexpr uint32_t kMaxMsgBytes = 4u << 20;
}  // namespace

CmdCallback CmdResult::callback() {
  return [this](const CmdCompletion& c) {
    done = true;
    status = c.status;
    delivery_status = c.delivery_status;
    out.assign(c.out.begin(), c.out.end());
  };
}

Result<std::unique_ptr<CmdQueue>> CmdQueue::create(DeviceIo& io, Config cfg) {
  const platform::Bar& bar = io.bar0();
  if (!bar.mapped() || !bar.contains(0, init_seg::kBits / 8)) {
    log::error(kLog, "BAR0 not mapped or smaller than the init segment");
    return Status{KBV_ERR_INVALID_ARGUMENT};
  }
  if (bar.read32_be(init_seg::kFwRevOff) == prm::kDeviceGone) {
    log::error(kLog, "fw_rev reads 0xffffffff: device not responding");
    return Status{KBV_ERR_DEVICE_REMOVED};
  }
  const uint32_t cmdif = read_reg(bar, 0, init_seg::cmd_interface_rev);
  if (cmdif != prm::kCmdifRev) {
    log::error(kLog, "command interface revision {} (driver speaks {})", cmdif, prm::kCmdifRev);
    return Status{KBV_ERR_NOT_SUPPORTED};
  }
  const uint32_t sz = bar.read32_be(init_seg::kCmdqAddrLSzOff);
  const uint32_t log_size = field_from_dword(sz, init_seg::log_cmdq_size);
  const uint32_t log_stride = field_from_dword(sz, init_seg::log_cmdq_stride);
  if (!prm::cmdq_geometry_valid(log_size, log_stride) || (1u << log_stride) < prm::kCmdEntryBytes) {
    log::error(kLog, "invalid command queue geometry: log_cmdq_size {} log_cmdq_stride {}",
               log_size, log_stride);
    return Status{KBV_ERR_NOT_SUPPORTED};
  }
  Result<DmaBlock> page = io.dma_alloc(1u << prm::kCmdqPageShift, 1u << prm::kCmdqPageShift);
  if (!page) return page.status();
  std::unique_ptr<CmdQueue> q(new CmdQueue(io, cfg, *page, log_size, log_stride));
  // mlx5_vfio.c / cmd.c: high dword first, then the low dword (4 KiB aligned,
  // nic_interface 0 = full driver), which makes the address take effect.
  bar.write32_be(init_seg::kCmdqAddrHOff, static_cast<uint32_t>(page->iova >> 32));
  bar.write32_be(init_seg::kCmdqAddrLSzOff, static_cast<uint32_t>(page->iova) & 0xFFFFF000u);
  log::info(kLog, "command queue at iova {:#x}: {} slots of {} bytes ({} regular + page slot {})",
            page->iova, q->nslots_, 1u << log_stride, q->nregular_, q->page_slot_);
  return q;
}

CmdQueue::CmdQueue(DeviceIo& io, Config cfg, DmaBlock page, uint32_t log_size, uint32_t log_stride)
    : io_(io),
      cfg_(cfg),
      page_(page),
      log_stride_(log_stride),
      nslots_(1u << log_size),
      nregular_(nslots_ > 1 ? nslots_ - 1 : 1),
      page_slot_(nslots_ - 1),
      mailboxes_(io) {}

CmdQueue::~CmdQueue() {
  const CmdqStats s = stats();
  if (s.in_flight || s.queued)
    log::warn(kLog, "destroyed with {} commands posted and {} queued (not completed)", s.in_flight,
              s.queued);
  for (Slot& sl : slots_) {
    mailboxes_.free_chain(sl.in_chain);
    mailboxes_.free_chain(sl.out_chain);
  }
  io_.dma_free(page_);
}

uint8_t CmdQueue::next_token() {
  // cmd.c alloc_token(): tokens cycle through 1..255; 0 is never used.
  token_ = static_cast<uint8_t>(token_ + 1);
  if (token_ == 0) token_ = 1;
  return token_;
}

bool CmdQueue::sw_owned(uint32_t slot) const {
  // The device writes status_own: one fresh load per check, never cached.
  const uint8_t so = platform::dma_load_owner(entry(slot) + cmd_layout::status_own.off / 8);
  return (so & prm::kCmdOwnerHw) == 0;
}

int CmdQueue::free_regular_slot() const {
  for (uint32_t i = 0; i < nregular_; ++i)
    if (slots_[i].state == SlotState::kFree) return static_cast<int>(i);
  return -1;
}

bool CmdQueue::idle() const {
  if (!queued_.empty() || !queued_page_.empty()) return false;
  for (uint32_t i = 0; i < nslots_; ++i)
    if (slots_[i].state == SlotState::kBusy) return false;
  return true;
}

CmdqStats CmdQueue::stats() const {
  CmdqStats s = stats_;
  s.in_flight = 0;
  s.quarantined = 0;
  for (uint32_t i = 0; i < nslots_; ++i) {
    if (slots_[i].state == SlotState::kBusy) ++s.in_flight;
    if (slots_[i].state == SlotState::kQuarantined) ++s.quarantined;
  }
  s.queued = static_cast<uint32_t>(queued_.size() + queued_page_.size());
  return s;
}

Status CmdQueue::submit(std::span<const std::byte> in, uint32_t out_len, CmdCallback cb,
                        SubmitOptions opts, uint64_t* id_out) {
  if (!failed_.is_ok()) return failed_;
  if (in.size() < prm::kCmdInlineBytes || in.size() > kMaxMsgBytes ||
      out_len < prm::kCmdInlineBytes || out_len > kMaxMsgBytes || !cb) {
    log::error(kLog, "submit: bad sizes (in {} out {}) or no callback", in.size(), out_len);
    return Status{KBV_ERR_INVALID_ARGUMENT};
  }
  const uint64_t timeout = opts.timeout_ns ? opts.timeout_ns : cfg_.default_timeout_ns;
  const bool page = opts.page_supply && nslots_ > 1;
  std::deque<Queued>& q = page ? queued_page_ : queued_;
  int slot = -1;
  if (q.empty()) {
    if (page)
      slot = slots_[page_slot_].state == SlotState::kFree ? static_cast<int>(page_slot_) : -1;
    else
      slot = free_regular_slot();
  }
  const uint64_t id = next_id_;
  if (slot >= 0) {
    Status s = post(static_cast<uint32_t>(slot), id, in, out_len, cb, timeout);
    if (!s) return s;
  } else {
    q.push_back(
        Queued{id, std::vector<std::byte>(in.begin(), in.end()), out_len, std::move(cb), timeout});
  }
  ++next_id_;
  if (id_out) *id_out = id;
  ++stats_.submitted;
  const uint32_t now_in_flight = stats().in_flight;
  if (now_in_flight > stats_.max_in_flight) stats_.max_in_flight = now_in_flight;
  return Status{KBV_PENDING};
}

Status CmdQueue::post(uint32_t slot, uint64_t id, std::span<const std::byte> in, uint32_t out_len,
                      CmdCallback& cb, uint64_t timeout_ns) {
  Slot& sl = slots_[slot];
  const uint8_t token = next_token();
  Status s = mailboxes_.alloc_chain(prm::mailbox_blocks(static_cast<uint32_t>(in.size())), token,
                                    sl.in_chain);
  if (s) s = mailboxes_.alloc_chain(prm::mailbox_blocks(out_len), token, sl.out_chain);
  if (!s) {
    mailboxes_.free_chain(sl.in_chain);
    mailboxes_.free_chain(sl.out_chain);
    return s;
  }
  MailboxPool::write_data(sl.in_chain, in.subspan(prm::kCmdInlineBytes));

  // The model device may read status_own at any time (its periodic scan of
  // idle slots), so the driver's plain stores stay off that byte: the entry
  // is built in bytes 0..62 and status_own is written alone, atomically.
  std::byte* e = entry(slot);
  constexpr size_t kOwnOff = cmd_layout::status_own.off / 8;
  static_assert(kOwnOff == prm::kCmdEntryBytes - 1);
  std::memset(e, 0, kOwnOff);
  platform::dma_store_owner(e + kOwnOff, 0);  // SW-owned, status 0
  prm::Ref<cmd_layout> ent(e);
  ent.set(cmd_layout::type, prm::kCmdTypePcie);
  ent.set(cmd_layout::inlen, in.size());
  ent.set(cmd_layout::in_ptr, sl.in_chain.empty() ? 0 : sl.in_chain.front().iova);
  ent.set_bytes(cmd_layout::in, in.first(prm::kCmdInlineBytes));
  ent.set(cmd_layout::out_ptr, sl.out_chain.empty() ? 0 : sl.out_chain.front().iova);
  ent.set(cmd_layout::outlen, out_len);
  // token is a whole byte of the last dword (a field store would rewrite the
  // dword, status_own included).
  static_assert(cmd_layout::token.off % 8 == 0 && cmd_layout::token.width == 8);
  e[cmd_layout::token.off / 8] = std::byte{token};

  prm::CRef<prm::mbox_in> hdr(in.data());
  sl.token = token;
  sl.id = id;
  sl.opcode = static_cast<uint16_t>(hdr.get(prm::mbox_in::opcode));
  sl.op_mod = static_cast<uint16_t>(hdr.get(prm::mbox_in::op_mod));
  sl.out_len = out_len;
  sl.post_ns = io_.now_ns();
  sl.deadline_ns = sl.post_ns + timeout_ns;
  sl.cb = std::move(cb);
  sl.complete_later = false;
  sl.state = SlotState::kBusy;
  trace_cmd_input(slot, token, in);

  // docs/PRM.md "Posting": the entry and mailboxes are complete before the
  // ownership bit hands them over, and all of it before the doorbell.
  if (cfg_.checksum) {
    for (const MailboxBlock& b : sl.in_chain) sign_block(b.va);
    for (const MailboxBlock& b : sl.out_chain) sign_block(b.va);
  }
  platform::udma_ordering_write_barrier();
  if (cfg_.checksum) {
    // cmd.c: the entry is signed as it will be with its ownership byte set
    // (status_own is 0 now, kCmdOwnerHw once handed over); the signature is
    // written before the handover, so a device that sees HW ownership also
    // sees the signature.
    static_assert(cmd_layout::sig.off % 8 == 0 && cmd_layout::sig.width == 8);
    e[cmd_layout::sig.off / 8] =
        std::byte{static_cast<uint8_t>(~(xor8(e, 0, prm::kCmdEntryBytes) ^ prm::kCmdOwnerHw))};
    platform::udma_ordering_write_barrier();
  }
  // status_own: status 0, the ownership bit to HW; the entry's last store.
  static_assert(cmd_layout::ownership.off / 8 == kOwnOff);
  platform::dma_store_owner(e + kOwnOff, prm::kCmdOwnerHw);
  platform::udma_to_device_barrier();
  io_.bar0().write32_be(init_seg::kCmdDbellOff, 1u << slot);
  return Status::ok();
}

void CmdQueue::finish(CmdCallback& cb, const CmdCompletion& c) {
  ++stats_.completed;
  if (c.status.is_error()) ++stats_.failed;
  CmdCallback local = std::move(cb);
  cb = nullptr;
  if (local) local(c);
}

void CmdQueue::complete(uint32_t slot) {
  Slot& sl = slots_[slot];
  if (!sl.cb) {
    // Cancelled while posted: the caller was already told; drop the result.
    log::debug(kLog, "slot {} ({}) finished after its cancel; result dropped", slot,
               prm::opcode_name(sl.opcode));
    mailboxes_.free_chain(sl.in_chain);
    mailboxes_.free_chain(sl.out_chain);
    sl.state = SlotState::kFree;
    return;
  }
  // The ownership bit was seen clear: read the rest only after it.
  platform::udma_from_device_barrier();
  prm::CRef<cmd_layout> ent(entry(slot));
  CmdCompletion c;
  c.opcode = sl.opcode;
  c.op_mod = sl.op_mod;
  c.latency_ns = io_.now_ns() - sl.post_ns;
  c.delivery_status =
      prm::delivery_status_of(static_cast<uint8_t>(ent.get(cmd_layout::status_own)));
  std::vector<std::byte> out;
  if (c.delivery_status != 0) {
    c.status = Status{KBV_ERR_CMD_DELIVERY};
  } else {
    try {
      out.resize(sl.out_len);
    } catch (const std::bad_alloc&) {
      // No memory for the output: nothing changed; the slot stays busy and
      // software-owned and poll() completes it later (an EQE lost this way
      // left its command waiting for its timeout: found by verbs_oom).
      sl.complete_later = true;
      return;
    }
    std::span<const std::byte> inl = ent.bytes(cmd_layout::out);
    std::memcpy(out.data(), inl.data(), prm::kCmdInlineBytes);
    MailboxPool::read_data(sl.out_chain, std::span<std::byte>(out).subspan(prm::kCmdInlineBytes));
    prm::CRef<prm::mbox_out> o(out.data());
    c.status = Status::from_fw(static_cast<uint8_t>(o.get(prm::mbox_out::status)),
                               static_cast<uint32_t>(o.get(prm::mbox_out::syndrome)));
    c.out = out;
  }
  trace_cmd_completion(slot, c);
  mailboxes_.free_chain(sl.in_chain);
  mailboxes_.free_chain(sl.out_chain);
  sl.state = SlotState::kFree;
  sl.complete_later = false;
  CmdCallback cb = std::move(sl.cb);
  sl.cb = nullptr;
  finish(cb, c);
}

void CmdQueue::release_quarantined(uint32_t slot) {
  Slot& sl = slots_[slot];
  log::warn(kLog, "slot {} ({} token {:#x}) returned by the device after its timeout; reusing it",
            slot, prm::opcode_name(sl.opcode), sl.token);
  mailboxes_.free_chain(sl.in_chain);
  mailboxes_.free_chain(sl.out_chain);
  sl.state = SlotState::kFree;
}

void CmdQueue::pump() {
  if (pumping_ || !failed_.is_ok()) return;
  pumping_ = true;
  while (!queued_.empty()) {
    const int slot = free_regular_slot();
    if (slot < 0) break;
    Queued q = std::move(queued_.front());
    queued_.pop_front();
    Status s = post(static_cast<uint32_t>(slot), q.id, q.in, q.out_len, q.cb, q.timeout_ns);
    if (!s) {
      CmdCompletion c;
      c.status = s;
      c.opcode =
          static_cast<uint16_t>(prm::CRef<prm::mbox_in>(q.in.data()).get(prm::mbox_in::opcode));
      finish(q.cb, c);
    }
  }
  while (!queued_page_.empty() && slots_[page_slot_].state == SlotState::kFree) {
    Queued q = std::move(queued_page_.front());
    queued_page_.pop_front();
    Status s = post(page_slot_, q.id, q.in, q.out_len, q.cb, q.timeout_ns);
    if (!s) {
      CmdCompletion c;
      c.status = s;
      finish(q.cb, c);
    }
  }
  const uint32_t inf = stats().in_flight;
  if (inf > stats_.max_in_flight) stats_.max_in_flight = inf;
  pumping_ = false;
}

uint32_t CmdQueue::poll() {
  uint32_t done = 0;
  if (!failed_.is_ok()) return 0;
  const uint64_t now = io_.now_ns();
  for (uint32_t i = 0; i < nslots_; ++i) {
    Slot& sl = slots_[i];
    if (sl.state == SlotState::kQuarantined) {
      if (sw_owned(i)) release_quarantined(i);
      continue;
    }
    if (sl.state != SlotState::kBusy) continue;
    if ((!event_mode_ || sl.complete_later) && sw_owned(i)) {
      complete(i);
      ++done;
      continue;
    }
    if (now >= sl.deadline_ns) {
      if (sw_owned(i)) {
        // Event mode and the EQE never came: recover from the entry itself.
        log::warn(kLog, "slot {} ({}) finished without a command EQE", i,
                  prm::opcode_name(sl.opcode));
        complete(i);
        ++done;
        continue;
      }
      sl.state = SlotState::kQuarantined;
      if (!sl.cb) continue;  // cancelled earlier: its caller was already told
      log::error(kLog, "slot {} ({} op_mod {:#x} token {:#x}) timed out after {} ms; quarantined",
                 i, prm::opcode_name(sl.opcode), sl.op_mod, sl.token, (now - sl.post_ns) / 1000000);
      CmdCompletion c;
      c.status = Status{KBV_ERR_TIMEOUT};
      c.opcode = sl.opcode;
      c.op_mod = sl.op_mod;
      c.latency_ns = now - sl.post_ns;
      ++stats_.timed_out;
      CmdCallback cb = std::move(sl.cb);
      sl.cb = nullptr;
      finish(cb, c);
      ++done;
    }
  }
  pump();
  return done;
}

uint32_t CmdQueue::on_cmd_eqe(uint32_t vector) {
  uint32_t done = 0;
  if (!failed_.is_ok()) return 0;
  for (uint32_t i = 0; i < nslots_; ++i) {
    if (!(vector & (1u << i))) continue;
    Slot& sl = slots_[i];
    if (!sw_owned(i)) {
      log::debug(kLog, "command EQE names slot {} but firmware still owns it; ignored", i);
      continue;
    }
    if (sl.state == SlotState::kBusy) {
      complete(i);
      ++done;
    } else if (sl.state == SlotState::kQuarantined) {
      release_quarantined(i);
    }
  }
  if (nslots_ < 32 && (vector >> nslots_) != 0)
    log::debug(kLog, "command EQE vector {:#x} names slots beyond the {} the queue has", vector,
               nslots_);
  pump();
  return done;
}

Status CmdQueue::cancel(uint64_t id) {
  auto cancelled = [&](CmdCallback& cb, uint16_t opcode, uint16_t op_mod) {
    ++stats_.cancelled;
    CmdCompletion c;
    c.status = Status{KBV_ERR_CANCELLED};
    c.opcode = opcode;
    c.op_mod = op_mod;
    finish(cb, c);
    return Status::ok();
  };
  for (std::deque<Queued>* q : {&queued_, &queued_page_}) {
    for (auto it = q->begin(); it != q->end(); ++it) {
      if (it->id != id) continue;
      Queued e = std::move(*it);
      q->erase(it);
      prm::CRef<prm::mbox_in> h(e.in.data());
      return cancelled(e.cb, static_cast<uint16_t>(h.get(prm::mbox_in::opcode)),
                       static_cast<uint16_t>(h.get(prm::mbox_in::op_mod)));
    }
  }
  for (uint32_t i = 0; i < nslots_; ++i) {
    Slot& sl = slots_[i];
    if (sl.state != SlotState::kBusy || sl.id != id || !sl.cb) continue;
    // Firmware still owns the slot; it is freed (result dropped) when it
    // comes back. complete() sees the missing callback.
    CmdCallback cb = std::move(sl.cb);
    sl.cb = nullptr;
    return cancelled(cb, sl.opcode, sl.op_mod);
  }
  return Status{KBV_ERR_NOT_FOUND};
}

void CmdQueue::fail_all(Status s) {
  if (!failed_.is_ok()) return;
  if (!s.is_error()) s = Status{KBV_ERR_DEVICE_FATAL};
  failed_ = s;
  log::error(kLog, "failing every outstanding command: {}", s.to_string());
  const uint64_t now = io_.now_ns();
  for (uint32_t i = 0; i < nslots_; ++i) {
    Slot& sl = slots_[i];
    if (sl.state != SlotState::kBusy) continue;
    // The device may still write the entry and mailboxes: keep them.
    sl.state = SlotState::kQuarantined;
    if (!sl.cb) continue;  // cancelled earlier
    CmdCompletion c;
    c.status = s;
    c.opcode = sl.opcode;
    c.op_mod = sl.op_mod;
    c.latency_ns = now - sl.post_ns;
    CmdCallback cb = std::move(sl.cb);
    sl.cb = nullptr;
    finish(cb, c);
  }
  for (std::deque<Queued>* q : {&queued_, &queued_page_}) {
    while (!q->empty()) {
      Queued e = std::move(q->front());
      q->pop_front();
      CmdCompletion c;
      c.status = s;
      c.opcode =
          static_cast<uint16_t>(prm::CRef<prm::mbox_in>(e.in.data()).get(prm::mbox_in::opcode));
      c.op_mod =
          static_cast<uint16_t>(prm::CRef<prm::mbox_in>(e.in.data()).get(prm::mbox_in::op_mod));
      finish(e.cb, c);
    }
  }
}

}  // namespace kbv::hca
