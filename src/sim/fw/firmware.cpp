// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/firmware.hpp"

#include "common/log.hpp"
#include "hca/prm/cmd_hdr.hpp"
#include "hca/prm/cmdq.hpp"
#include "hca/prm/eqe.hpp"
#include "hca/prm/init_seg.hpp"
#include "hca/prm/uar.hpp"
#include "sim/fw/cmdq.hpp"
#include "sim/fw/hca_cmds.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace kbv::sim::fw {

namespace {
constexpr const char* kLog = "sim.fw";
using Clock = std::chrono::steady_clock;

uint32_t bar_load(std::span<std::byte> bar, uint32_t off) {
  uint32_t v = std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar.data() + off))
                   .load(std::memory_order_acquire);
  return __builtin_bswap32(v);
}
void bar_store(std::span<std::byte> bar, uint32_t off, uint32_t v) {
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar.data() + off))
      .store(__builtin_bswap32(v), std::memory_order_release);
}
}  // namespace

struct Firmware::Inflight {
  SlotCommand cmd;
  Clock::time_point deadline;
  uint64_t seq = 0;
};

Firmware::Firmware(PciFunction& pci, FwConfig cfg)
    : pci_(pci),
      cfg_(std::move(cfg)),
      ctx_(pci_, cfg_),
      trace_(cfg_.trace || (cfg_.trace_from_env && CmdTrace::env_enabled())),
      latency_(cfg_.cmd_latency),
      max_concurrent_(cfg_.max_concurrent == 0 ? 1 : cfg_.max_concurrent) {
  trace_.set_device(cfg_.trace_device);
  register_hca_commands(registry_);
  register_page_commands(registry_);
  register_cap_commands(registry_);
  register_uar_commands(registry_);
  register_eq_commands(registry_);
  for (const auto& r : cfg_.registrars) r(registry_);
  // Device-side timers of handlers: dropped when the context's epoch moved
  // (teardown / reset) before they were due.
  ctx_.set_scheduler([this](std::chrono::nanoseconds delay, FwContext::Task t) {
    post_after(delay, [this, epoch = ctx_.epoch(), t = std::move(t)] {
      if (ctx_.epoch() == epoch) t();
    });
  });
}

Firmware::~Firmware() {
  stop();
  for (int fd : {epfd_, tfd_, efd_})
    if (fd >= 0) ::close(fd);
}

Status Firmware::add_wait_fd(int fd) {
  if (thread_.joinable()) return KBV_ERR_INVALID_STATE;
  wait_fds_.push_back(fd);
  return Status::ok();
}

Status Firmware::start() {
  if (thread_.joinable()) return KBV_ERR_INVALID_STATE;
  if (efd_ < 0) {
    efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    tfd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (efd_ < 0 || tfd_ < 0 || epfd_ < 0) {
      log::error(kLog, "eventfd/timerfd/epoll: {}", std::strerror(errno));
      return KBV_ERR_IO;
    }
    for (int fd : {efd_, tfd_}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        log::error(kLog, "epoll_ctl: {}", std::strerror(errno));
        return KBV_ERR_IO;
      }
    }
    for (int fd : wait_fds_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        log::error(kLog, "epoll_ctl (wait fd {}): {}", fd, std::strerror(errno));
        return KBV_ERR_IO;
      }
    }
  }
  read_geometry();
  stop_.store(false);
  cmdq_dirty_.store(true);  // the driver may have written the address already
  pci_.set_bar0_write_handler(
      [this](uint64_t off, uint64_t v, unsigned w) { on_bar0_write(off, v, w); });
  pci_.set_reset_handler([this] { on_reset(); });
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

void Firmware::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  wake();
  thread_.join();
  pci_.set_bar0_write_handler({});
  pci_.set_reset_handler({});
}

// ---- hooks -------------------------------------------------------------------

void Firmware::set_latency(std::chrono::nanoseconds t) {
  std::lock_guard lock(hook_mu_);
  latency_ = t;
}

void Firmware::set_max_concurrent(unsigned n) {
  {
    std::lock_guard lock(hook_mu_);
    max_concurrent_ = n == 0 ? 1 : n;
  }
  wake();
}

void Firmware::fail_opcode(uint16_t opcode, uint8_t status, uint32_t syndrome, uint32_t times) {
  std::lock_guard lock(hook_mu_);
  Fault& f = faults_[opcode];
  f.status = status;
  f.syndrome = syndrome;
  f.times = times;
}

void Firmware::delay_opcode(uint16_t opcode, std::chrono::nanoseconds extra) {
  std::lock_guard lock(hook_mu_);
  faults_[opcode].delay = extra;
}

void Firmware::clear_faults() {
  std::lock_guard lock(hook_mu_);
  faults_.clear();
}

void Firmware::post(std::function<void()> task) {
  {
    std::lock_guard lock(hook_mu_);
    tasks_.push_back(std::move(task));
  }
  wake();
}

void Firmware::post_after(std::chrono::nanoseconds delay, std::function<void()> task) {
  {
    std::lock_guard lock(hook_mu_);
    timed_.push_back({Clock::now() + delay, std::move(task)});
  }
  wake();
}

int Firmware::run_timed(Clock::time_point now) {
  std::vector<std::function<void()>> due;
  int next_ms = -1;
  {
    std::lock_guard lock(hook_mu_);
    for (auto it = timed_.begin(); it != timed_.end();) {
      if (it->due <= now) {
        due.push_back(std::move(it->fn));
        it = timed_.erase(it);
        continue;
      }
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(it->due - now).count();
      if (next_ms < 0 || ms < next_ms) next_ms = static_cast<int>(ms);
      ++it;
    }
  }
  for (auto& t : due) t();
  return next_ms;
}

void Firmware::request_pages(int32_t npages) {
  {
    std::lock_guard lock(hook_mu_);
    tasks_.push_back([this, npages] {
      ctx_.pages().request(npages);
      std::array<std::byte, prm::kEqeDataBits / 8> data{};
      prm::Ref<prm::eqe_page_req> d(data.data());
      d.set(prm::eqe_page_req::function_id, 0);  // this function (the PF itself)
      d.set(prm::eqe_page_req::num_pages, static_cast<uint32_t>(npages));
      Status s = ctx_.eqs().post_event(prm::EventType::PAGE_REQUEST, 0, data);
      if (!s)
        log::warn(kLog, "page request ({} pages) not delivered as an EQE: {}", npages, s.name());
    });
  }
  wake();
}

FwStats Firmware::stats() const {
  FwStats s;
  s.commands = st_commands_.load();
  s.failed = st_failed_.load();
  s.delivery_errors = st_delivery_.load();
  s.entry_faults = st_faults_.load();
  s.cmd_eqes = st_eqes_.load();
  s.ignored_doorbells = st_ignored_.load();
  s.max_inflight = st_max_inflight_.load();
  s.loop_passes = st_passes_.load();
  s.scans = st_scans_.load();
  return s;
}

// ---- writer-thread side --------------------------------------------------------

bool Firmware::fd_ready(int fd) const {
  for (int i = 0; i < n_ready_; ++i)
    if (ready_fds_[static_cast<size_t>(i)] == fd) return true;
  return false;
}

void Firmware::wake() {
  // Whoever wakes recorded its work first; the loop reads wake_seq_ before
  // it looks at the work and again (after raising sleeping_) before it
  // sleeps, so either it sees the count moved or this sees it sleeping
  // (sequentially consistent pair).
  wake_seq_.fetch_add(1, std::memory_order_seq_cst);
  if (!sleeping_.load(std::memory_order_seq_cst)) return;
  if (efd_ < 0) return;
  const uint64_t one = 1;
  ssize_t r = ::write(efd_, &one, sizeof one);
  (void)r;  // EAGAIN: the counter is saturated, the thread is awake anyway
}

bool Firmware::run_if_idle(bool (*fn)(void*), void* arg) {
  std::unique_lock lock(pass_mu_, std::try_to_lock);
  if (!lock.owns_lock() || !loop_alive_) return false;
  return fn(arg);
}

void Firmware::on_bar0_write(uint64_t offset, uint64_t value, unsigned width) {
  if (offset == prm::init_seg::kCmdDbellOff) {
    // The bits name the rung slots (CPU order, platform/sys.hpp MmioTrap).
    // Every doorbell also makes the firmware look at the ownership bits of
    // its idle slots, so a doorbell reported in another byte order (a BAR
    // poller handing over the register's raw image) still finds its slots.
    rung_.fetch_or(static_cast<uint32_t>(value), std::memory_order_acq_rel);
    dbell_scan_.store(true, std::memory_order_release);
    wake();
    return;
  }
  if (offset == prm::init_seg::kCmdqAddrHOff || offset == prm::init_seg::kCmdqAddrLSzOff) {
    cmdq_dirty_.store(true, std::memory_order_release);
    wake();
    return;
  }
  // EQ doorbells (docs/PRM.md "EQ doorbell"): update ci and arm, or update ci.
  const uint32_t page = prm::uar_page_of(offset);
  if (ctx_.uars().in_range(page)) {
    const uint32_t in_page = prm::uar_offset_in_page(offset);
    if (width == 4 && (in_page == prm::kUarEqDoorbellArmOff || in_page == prm::kUarEqDoorbellOff)) {
      if (ctx_.eqs().record_doorbell(page, static_cast<uint32_t>(value),
                                     in_page == prm::kUarEqDoorbellArmOff))
        wake();
      return;
    }
  }
  if (uar_listener_) uar_listener_(offset, value, width);
}

void Firmware::on_reset() {
  // The PCI function re-initialized BAR0 before calling us: the geometry is
  // readable now, before the driver overwrites 0x14 with the queue address.
  reset_geometry_.store(bar_load(pci_.bar0(), prm::init_seg::kCmdqAddrLSzOff),
                        std::memory_order_relaxed);
  reset_req_.store(true, std::memory_order_release);
  wake();
}

// ---- firmware thread -----------------------------------------------------------

void Firmware::read_geometry() {
  set_geometry(bar_load(pci_.bar0(), prm::init_seg::kCmdqAddrLSzOff));
}

void Firmware::set_geometry(uint32_t l) {
  const uint32_t size = (l >> 4) & 0xF;
  const uint32_t stride = l & 0xF;
  if (!prm::cmdq_geometry_valid(size, stride) || stride < 6) {
    log::error(kLog, "BAR0 0x14 reads {:#x}: not a valid command queue geometry; using 32 x 64 B",
               l);
    log_size_ = 5;
    log_stride_ = 6;
    return;
  }
  log_size_ = size;
  log_stride_ = stride;
}

void Firmware::latch_cmdq() {
  auto bar = pci_.bar0();
  const uint32_t h = bar_load(bar, prm::init_seg::kCmdqAddrHOff);
  const uint32_t l = bar_load(bar, prm::init_seg::kCmdqAddrLSzOff);
  const uint32_t geometry = log_size_ << 4 | log_stride_;
  const uint64_t addr = static_cast<uint64_t>(h) << 32 | (l & ~0xFFFu);
  if ((l & 0xFF) == geometry && (!cmdq_valid_ || addr == cmdq_iova_)) return;  // unchanged
  cmdq_iova_ = addr;
  cmdq_valid_ = true;
  // Reads of 0x14 return the address with the geometry in the low byte
  // (docs/PRM.md; nic_interface bits 10:8 stay as written).
  bar_store(bar, prm::init_seg::kCmdqAddrLSzOff, (l & ~0xFFu) | geometry);
  log::debug(kLog, "command queue at iova {:#x} ({} slots of {} B)", addr, 1u << log_size_,
             1u << log_stride_);
}

uint64_t Firmware::slot_iova(unsigned slot) const {
  return cmdq_iova_ + (static_cast<uint64_t>(slot) << log_stride_);
}

uint32_t Firmware::scan_owned() {
  if (!cmdq_valid_) return 0;
  uint32_t mask = 0;
  const uint32_t busy = inflight_mask_ | pending_mask_;
  for (unsigned s = 0; s < (1u << log_size_); ++s) {
    if (busy & (1u << s)) continue;
    std::byte so{};
    if (!pci_.iommu().dma_read(slot_iova(s) + prm::cmd_layout::status_own.off / 8,
                               std::span(&so, 1)))
      return mask;  // queue page unmapped: nothing to find
    if ((static_cast<uint8_t>(so) & 1) == prm::kCmdOwnerHw) mask |= 1u << s;
  }
  return mask;
}

void Firmware::admit(Clock::time_point now) {
  unsigned limit;
  std::chrono::nanoseconds latency;
  {
    std::lock_guard lock(hook_mu_);
    limit = max_concurrent_;
    latency = latency_;
  }
  const bool checksum = ctx_.caps().checksum_enabled();
  uint32_t eqe_mask = 0;
  while (!pending_.empty() && inflight_.size() < limit) {
    const unsigned slot = pending_.front();
    pending_.erase(pending_.begin());
    pending_mask_ &= ~(1u << slot);
    auto f = std::make_unique<Inflight>();
    if (!fetch_command(pci_.iommu(), slot_iova(slot), slot, checksum, f->cmd)) {
      st_faults_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (!f->cmd.owned) {
      st_ignored_.fetch_add(1, std::memory_order_relaxed);
      log::debug(kLog, "slot {} rung but not owned by firmware: ignored", slot);
      continue;
    }
    if (f->cmd.delivery != 0) {
      st_delivery_.fetch_add(1, std::memory_order_relaxed);
      log::warn(kLog, "slot {}: delivery error {} ({:#x})", slot,
                prm::delivery_status_name(f->cmd.delivery), f->cmd.delivery);
      trace_.record(slot, 0, 0, f->cmd.delivery, {}, f->cmd.in, {});
      const bool event_mode = ctx_.eqs().subscribed(prm::EventType::CMD);
      if (!post_completion(pci_.iommu(), f->cmd, {}, checksum))
        st_faults_.fetch_add(1, std::memory_order_relaxed);
      else if (event_mode)
        eqe_mask |= 1u << slot;
      continue;
    }
    std::chrono::nanoseconds extra{0};
    {
      const uint16_t op = static_cast<uint16_t>(
          prm::CRef<prm::mbox_in>(f->cmd.in.data()).get(prm::mbox_in::opcode));
      std::lock_guard lock(hook_mu_);
      if (auto it = faults_.find(op); it != faults_.end()) extra = it->second.delay;
    }
    f->deadline = now + latency + extra;
    f->seq = admitted_++;
    inflight_mask_ |= 1u << slot;
    inflight_.push_back(std::move(f));
    if (inflight_.size() > st_max_inflight_.load(std::memory_order_relaxed))
      st_max_inflight_.store(inflight_.size(), std::memory_order_relaxed);
  }
  if (eqe_mask != 0) {
    std::array<std::byte, prm::kEqeDataBits / 8> data{};
    prm::Ref<prm::eqe_cmd>(data.data()).set(prm::eqe_cmd::vector, eqe_mask);
    if (ctx_.eqs().post_event(prm::EventType::CMD, 0, data))
      st_eqes_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Firmware::execute(Inflight& f, uint32_t& eqe_mask) {
  SlotCommand& sc = f.cmd;
  prm::CRef<prm::mbox_in> hdr(sc.in.data());  // inlen >= 8: opcode, uid, op_mod
  Command c;
  c.opcode = static_cast<uint16_t>(hdr.get(prm::mbox_in::opcode));
  c.uid = static_cast<uint16_t>(hdr.get(prm::mbox_in::uid));
  c.op_mod = static_cast<uint16_t>(hdr.get(prm::mbox_in::op_mod));
  c.in = sc.in;

  std::vector<std::byte> out(sc.outlen);
  const bool event_mode = ctx_.eqs().subscribed(prm::EventType::CMD);

  std::optional<Outcome> injected;
  {
    std::lock_guard lock(hook_mu_);
    if (auto it = faults_.find(c.opcode); it != faults_.end() && it->second.times > 0) {
      Fault& fl = it->second;
      injected = Outcome{fl.status, fl.syndrome};
      if (fl.times != kForever) --fl.times;
    }
  }
  Outcome o;
  if (injected) {
    o = *injected;
  } else {
    const Handler* h = registry_.find(c.opcode);
    o = CommandRegistry::check(h, c, out.size(), ctx_.hca().enabled, ctx_.hca().initialized);
    if (o.is_ok()) o = h->fn(ctx_, c, out);
  }
  if (!o.is_ok()) std::fill(out.begin(), out.end(), std::byte{0});
  // status (byte 0) and syndrome (bytes 4..7): outlen >= 8 (transport check).
  prm::Ref<prm::mbox_out> oh(out.data());
  oh.set(prm::mbox_out::status, o.status);
  oh.set(prm::mbox_out::syndrome, o.syndrome);

  st_commands_.fetch_add(1, std::memory_order_relaxed);
  if (!o.is_ok()) {
    st_failed_.fetch_add(1, std::memory_order_relaxed);
    log::debug(kLog, "slot {} {} op_mod {:#x}: {} syndrome {:#x}", sc.slot,
               prm::opcode_name(c.opcode), c.op_mod, prm::cmd_status_name(o.status), o.syndrome);
  }
  trace_.record(sc.slot, c.opcode, c.op_mod, 0, o, sc.in, out);
  if (!post_completion(pci_.iommu(), sc, out, ctx_.caps().checksum_enabled())) {
    st_faults_.fetch_add(1, std::memory_order_relaxed);
    log::error(kLog, "slot {}: completion could not be written (IOMMU fault)", sc.slot);
    return;
  }
  if (event_mode) eqe_mask |= 1u << sc.slot;
}

bool Firmware::complete_due(Clock::time_point now) {
  std::vector<std::unique_ptr<Inflight>> due;
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    if ((*it)->deadline <= now) {
      due.push_back(std::move(*it));
      it = inflight_.erase(it);
    } else {
      ++it;
    }
  }
  if (due.empty()) return false;
  std::sort(due.begin(), due.end(), [](const auto& a, const auto& b) {
    return a->deadline != b->deadline ? a->deadline < b->deadline : a->seq < b->seq;
  });
  uint32_t eqe_mask = 0;
  for (auto& f : due) {
    inflight_mask_ &= ~(1u << f->cmd.slot);
    execute(*f, eqe_mask);
    if (reset_req_.load(std::memory_order_acquire)) break;
  }
  if (eqe_mask != 0) {
    std::array<std::byte, prm::kEqeDataBits / 8> data{};
    prm::Ref<prm::eqe_cmd>(data.data()).set(prm::eqe_cmd::vector, eqe_mask);
    if (ctx_.eqs().post_event(prm::EventType::CMD, 0, data))
      st_eqes_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

void Firmware::arm_timer(Clock::time_point now) {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& f : inflight_) next = std::min(next, f->deadline);
  if (next == tfd_at_) return;  // already armed for it (or disarmed)
  tfd_at_ = next;
  itimerspec its{};
  if (next != Clock::time_point::max()) {
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(next - now).count();
    if (wait < 1) wait = 1;
    its.it_value.tv_sec = wait / 1000000000;
    its.it_value.tv_nsec = wait % 1000000000;
  }
  ::timerfd_settime(tfd_, 0, &its, nullptr);
}

void Firmware::do_reset() {
  inflight_.clear();
  pending_.clear();
  inflight_mask_ = 0;
  pending_mask_ = 0;
  rung_.store(0);
  cmdq_valid_ = false;
  cmdq_iova_ = 0;
  ctx_.reset();
  set_geometry(reset_geometry_.load(std::memory_order_relaxed));
  log::debug(kLog, "reset: firmware state dropped");
}

void Firmware::run() {
  // The model plays hardware with processors of its own, which never waits
  // behind the application's threads for a CPU: this thread (firmware and
  // the data-path engine) asks for a larger share of the CPU than threads at
  // the default nice level, so a busy-polling application on a loaded host
  // cannot starve it for longer than the transport's ack timeout (on 2
  // cores with a load of 14 it was off the CPU for 90 ms at a time, and RC
  // requests timed out). It sleeps in epoll_wait whenever idle, so it takes
  // nothing from anyone then. Best effort: raising priority needs
  // CAP_SYS_NICE (or RLIMIT_NICE); without it the thread stays as it is.
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kThreadNice) != 0)
    log::debug(kLog, "setpriority({}): {}", kThreadNice, std::strerror(errno));
  std::array<epoll_event, 8> evs{};
  // Not a count wake_seq_ can hold yet: the first pass runs without
  // sleeping (a doorbell may have been rung before this thread started).
  uint64_t seen_seq = wake_seq_.load(std::memory_order_seq_cst) - 1;
  // Each pass holds pass_mu_; it is released only around epoll_wait (and
  // at exit), when run_if_idle() may run a doorbell on another thread.
  std::unique_lock pass(pass_mu_);
  loop_alive_ = true;
  while (!stop_.load(std::memory_order_acquire)) {
    auto now = Clock::now();
    int timeout_ms = -1;
    if (cfg_.scan_interval.count() > 0) {
      auto until = std::chrono::ceil<std::chrono::milliseconds>(next_scan_ - now).count();
      timeout_ms = static_cast<int>(std::max<int64_t>(0, until));
    }
    if (init_wait_ && (timeout_ms < 0 || timeout_ms > 1)) timeout_ms = 1;
    if (const int t = run_timed(now); t >= 0 && (timeout_ms < 0 || t < timeout_ms)) timeout_ms = t;
    if (hook_due_ != Clock::time_point::max()) {
      // The engine's next deadline, rounded up to the epoll millisecond.
      const auto ms = std::max<int64_t>(
          0, std::chrono::ceil<std::chrono::milliseconds>(hook_due_ - now).count());
      if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = static_cast<int>(ms);
    }
    sleeping_.store(true, std::memory_order_seq_cst);
    if (wake_seq_.load(std::memory_order_seq_cst) != seen_seq) timeout_ms = 0;  // woken meanwhile
    pass.unlock();
    const int n = ::epoll_wait(epfd_, evs.data(), static_cast<int>(evs.size()), timeout_ms);
    pass.lock();
    sleeping_.store(false, std::memory_order_relaxed);
    st_passes_.fetch_add(1, std::memory_order_relaxed);
    seen_seq = wake_seq_.load(std::memory_order_seq_cst);
    if (n < 0 && errno != EINTR) {
      log::error(kLog, "epoll_wait: {}", std::strerror(errno));
      break;
    }
    n_ready_ = 0;
    for (int i = 0; i < n; ++i) {
      ready_fds_[static_cast<size_t>(n_ready_++)] = evs[i].data.fd;
      if (evs[i].data.fd != efd_ && evs[i].data.fd != tfd_) continue;  // the hook drains it
      if (evs[i].data.fd == tfd_) tfd_at_ = Clock::time_point::max();  // expired: re-arm next
      uint64_t v;
      ssize_t r = ::read(evs[i].data.fd, &v, sizeof v);
      (void)r;
    }
    if (stop_.load(std::memory_order_acquire)) break;
    if (reset_req_.exchange(false, std::memory_order_acq_rel)) do_reset();

    std::vector<std::function<void()>> tasks;
    {
      std::lock_guard lock(hook_mu_);
      tasks.swap(tasks_);
    }
    for (auto& t : tasks) t();
    if (loop_hook_) hook_due_ = loop_hook_();

    now = Clock::now();
    const bool scan = cfg_.scan_interval.count() > 0 && now >= next_scan_;
    if (scan) {
      next_scan_ = now + cfg_.scan_interval;
      st_scans_.fetch_add(1, std::memory_order_relaxed);
    }
    if (cmdq_dirty_.exchange(false, std::memory_order_acq_rel) || scan) latch_cmdq();
    ctx_.eqs().apply_doorbells();

    uint32_t bits = rung_.exchange(0, std::memory_order_acq_rel);
    const bool dbell_scan = dbell_scan_.exchange(false, std::memory_order_acq_rel);
    if (cmdq_valid_) {
      // Rung slots that are not owned by firmware are reported (ignored
      // doorbells); the ownership scan adds owned idle slots.
      const uint32_t owned = (scan || dbell_scan) ? scan_owned() : 0;
      bits |= owned;
    }
    if (bits != 0 && !cmdq_valid_) {
      log::warn(kLog, "doorbell {:#x} before the command queue address was written: ignored", bits);
      bits = 0;
    }
    bits &= (log_size_ >= 5) ? ~0u : ((1u << (1u << log_size_)) - 1);
    for (unsigned s = 0; bits != 0; ++s, bits >>= 1) {
      if (!(bits & 1)) continue;
      const uint32_t b = 1u << s;
      if ((inflight_mask_ | pending_mask_) & b) continue;
      pending_mask_ |= b;
      pending_.push_back(s);
    }
    // While `initializing` (init segment 0x1FC bit 31) is set the command
    // interface is not up: rung slots wait (PRM: drivers poll it clear first).
    init_wait_ =
        (bar_load(pci_.bar0(), prm::init_seg::kInitializingOff) & prm::kInitializingBit) != 0;
    if (init_wait_) {
      arm_timer(Clock::now());
      continue;
    }
    // Admit and complete until nothing more is due now (latency 0 runs a
    // whole burst in one pass).
    for (;;) {
      now = Clock::now();
      admit(now);
      if (!complete_due(Clock::now())) break;
      if (reset_req_.load(std::memory_order_acquire)) break;
    }
    arm_timer(Clock::now());
  }
  loop_alive_ = false;
}

}  // namespace kbv::sim::fw
