// SPDX-License-Identifier: BSD-3-Clause
//
// winverbs_pingpong.cpp — an RC ping-pong written the way a WinVerbs
// application of the OpenFabrics Windows stack is written (the COM-style
// IWV* interfaces, docs/NTSTATUS.md source 003), on kbv's
// kbv/compat/winverbs.h only:
//
//   a provider over two HCAs; QueryDeviceList for their GUIDs and
//   OpenDevice(guid) (WinVerbs names a CA by GUID); QueryPort until the port
//   is active, QueryGid; AllocateProtectionDomain, CreateCompletionQueue,
//   RegisterMemory (with an OVERLAPPED, read back by GetOverlappedResult),
//   CreateConnectQueuePair, Modify RESET -> INIT -> RTR -> RTS; then "ping"
//   Sends and "pong" returns each message, ITERS times, every message
//   checked byte for byte. Each side waits for its receive with an
//   asynchronous IWVCompletionQueue::Notify request (OVERLAPPED, completed
//   by the CQ's completion event, polled with GetOverlappedResult) and reads
//   the completion with Poll. Then every object is Released.
//
// Two HCAs in one process: by default two model HCAs ("sim:wv_ping",
// "sim:wv_pong", RoCEv2 over loopback UDP). Usage:
//   winverbs_pingpong [uri_a uri_b [iters]]
#include <arpa/inet.h>
#include <endian.h>
#include <kbv/compat/winverbs.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

constexpr uint32_t kMsg = 64;
constexpr auto kWait = std::chrono::seconds(10);  // give up on a request after this

struct Side {
  const char* name = nullptr;
  NET64 guid = 0;
  IWVDevice* dev = nullptr;
  IWVProtectionDomain* pd = nullptr;
  IWVCompletionQueue* cq = nullptr;
  IWVConnectQueuePair* qp = nullptr;
  WV_MEMORY_KEYS keys{};
  WV_GID gid{};
  uint32_t qpn = 0;
  unsigned char buf[2 * kMsg] = {};  // [0, kMsg) send, [kMsg, 2 kMsg) receive
};

bool ok(const char* what, HRESULT hr) {
  if (SUCCEEDED(hr)) return true;
  std::fprintf(stderr, "winverbs_pingpong: %s: %s\n", what, kbv_wv_status_str(hr));
  return false;
}

// Polls a request (GetOverlappedResult without waiting) until it completed.
HRESULT wait_request(IWVOverlapped* obj, OVERLAPPED* ov) {
  const auto until = std::chrono::steady_clock::now() + kWait;
  HRESULT hr;
  while ((hr = obj->GetOverlappedResult(ov, nullptr, 0)) == WV_PENDING) {
    if (std::chrono::steady_clock::now() > until) {
      obj->CancelOverlappedRequests();  // completes it with WV_CANCELLED
      return obj->GetOverlappedResult(ov, nullptr, 1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return hr;
}

// One completion: Poll, else a Notify request, Poll again (one may have come
// before the arm), then wait for the request.
bool next_completion(Side& s, WV_COMPLETION* wc) {
  for (int round = 0; round < 1000; ++round) {
    if (s.cq->Poll(wc, 1) == 1) return ok("completion", wc->Status);
    OVERLAPPED ov{};
    HRESULT hr = s.cq->Notify(WvCqNextCompletion, &ov);
    if (hr != WV_IO_PENDING) return ok("Notify", hr);
    if (s.cq->Poll(wc, 1) == 1) {
      s.cq->CancelOverlappedRequests();
      (void)s.cq->GetOverlappedResult(&ov, nullptr, 1);
      return ok("completion", wc->Status);
    }
    if (!ok("CQ notification", wait_request(s.cq, &ov))) return false;
  }
  return false;
}

bool open_side(IWVProvider* prov, Side& s) {
  if (!ok("OpenDevice", prov->OpenDevice(s.guid, &s.dev))) return false;
  WV_PORT_ATTRIBUTES pa{};
  const auto until = std::chrono::steady_clock::now() + kWait;
  do {
    if (!ok("QueryPort", s.dev->QueryPort(1, &pa))) return false;
    if (pa.State != WvPortActive) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } while (pa.State != WvPortActive && std::chrono::steady_clock::now() < until);
  if (pa.State != WvPortActive) {
    std::fprintf(stderr, "winverbs_pingpong: %s: port never active\n", s.name);
    return false;
  }
  if (!ok("QueryGid", s.dev->QueryGid(1, 0, &s.gid))) return false;
  if (!ok("AllocateProtectionDomain", s.dev->AllocateProtectionDomain(&s.pd))) return false;
  SIZE_T entries = 8;
  if (!ok("CreateCompletionQueue", s.dev->CreateCompletionQueue(&entries, &s.cq))) return false;
  OVERLAPPED ov{};
  HRESULT hr = s.pd->RegisterMemory(s.buf, sizeof s.buf, WV_ACCESS_LOCAL_WRITE, &ov, &s.keys);
  if (hr == WV_IO_PENDING) hr = s.pd->GetOverlappedResult(&ov, nullptr, 1);
  if (!ok("RegisterMemory", hr)) return false;
  WV_QP_CREATE c{};
  c.pSendCq = s.cq;
  c.pReceiveCq = s.cq;
  c.Context = &s;
  c.SendDepth = 4;
  c.SendSge = 1;
  c.ReceiveDepth = 4;
  c.ReceiveSge = 1;
  c.QpType = WvQpTypeRc;
  c.QpFlags = WV_QP_SIGNAL_SENDS;
  if (!ok("CreateConnectQueuePair", s.pd->CreateConnectQueuePair(&c, &s.qp))) return false;
  WV_QP_ATTRIBUTES q{};
  if (!ok("Query", s.qp->Query(&q))) return false;
  s.qpn = ntohl(q.Qpn);
  return true;
}

bool connect_side(Side& s, const Side& peer) {
  WV_QP_ATTRIBUTES a{};
  a.QpState = WvQpStateInit;
  a.AddressVector.PortNumber = 1;
  a.AccessFlags = WV_ACCESS_LOCAL_WRITE;
  if (!ok("Modify INIT", s.qp->Modify(&a, WV_QP_ATTR_STATE, nullptr))) return false;
  a = WV_QP_ATTRIBUTES{};
  a.QpState = WvQpStateRtr;
  a.ReceivePsn = htonl(0x100);
  a.DestinationQpn = htonl(peer.qpn);
  a.AddressVector.Route.Valid = 1;  // RoCE: every packet has a GRH
  a.AddressVector.Route.HopLimit = 64;
  a.AddressVector.Route.DGid = peer.gid;
  a.AddressVector.PortNumber = 1;
  a.PathMtu = 1024;
  a.ResponderResources = 1;
  a.RnrNakTimeout = 12;
  if (!ok("Modify RTR", s.qp->Modify(&a, WV_QP_ATTR_STATE, nullptr))) return false;
  a = WV_QP_ATTRIBUTES{};
  a.QpState = WvQpStateRts;
  a.SendPsn = htonl(0x100);
  a.SequenceErrorRetryCount = 7;
  a.RnrRetryCount = 7;
  a.LocalAckTimeout = 14;
  a.InitiatorDepth = 1;
  return ok("Modify RTS", s.qp->Modify(&a, WV_QP_ATTR_STATE, nullptr));
}

bool post_receive(Side& s, uint64_t id) {
  WV_SGE r{s.buf + kMsg, kMsg, s.keys.Lkey};
  return ok("PostReceive", s.qp->PostReceive(id, &r, 1));
}

// from sends message `seq`; to receives and checks it (and reposts).
bool hop(Side& from, Side& to, uint32_t seq) {
  std::memset(from.buf, static_cast<int>(seq & 0xff), kMsg);
  std::memcpy(from.buf, &seq, sizeof seq);
  WV_SGE s{from.buf, kMsg, from.keys.Lkey};
  if (!ok("Send", from.qp->Send(seq, &s, 1, WV_SEND_SIGNALED, 0))) return false;
  WV_COMPLETION wc{};
  if (!next_completion(to, &wc)) return false;
  if (wc.Opcode != WvReceive || wc.Length != kMsg || wc.QpContext != &to) {
    std::fprintf(stderr, "winverbs_pingpong: unexpected completion (opcode %d, %u bytes)\n",
                 static_cast<int>(wc.Opcode), wc.Length);
    return false;
  }
  uint32_t got = 0;
  std::memcpy(&got, to.buf + kMsg, sizeof got);
  for (uint32_t i = sizeof seq; i < kMsg; ++i)
    if (got != seq || to.buf[kMsg + i] != (seq & 0xff)) {
      std::fprintf(stderr, "winverbs_pingpong: message %u byte %u wrong\n", seq, i);
      return false;
    }
  if (!post_receive(to, seq + 1)) return false;
  return next_completion(from, &wc) && wc.Opcode == WvSend && wc.WrId == seq;
}

void close_side(Side& s) {
  if (s.qp) s.qp->Release();
  if (s.cq) s.cq->Release();
  if (s.pd) {
    if (s.keys.Lkey) (void)s.pd->DeregisterMemory(s.keys.Lkey, nullptr);
    s.pd->Release();
  }
  if (s.dev) s.dev->Release();
}

}  // namespace

int main(int argc, char** argv) {
  const char* uris[2] = {argc > 2 ? argv[1] : "sim:wv_ping", argc > 2 ? argv[2] : "sim:wv_pong"};
  const unsigned iters = argc > 3 ? static_cast<unsigned>(std::strtoul(argv[3], nullptr, 0)) : 100;
  IWVProvider* prov = nullptr;
  if (!ok("kbv_wv_open_provider", kbv_wv_open_provider(uris, 2, nullptr, &prov))) return 1;
  NET64 guids[2] = {};
  SIZE_T size = sizeof guids;
  Side a, b;
  a.name = uris[0];
  b.name = uris[1];
  bool good = ok("QueryDeviceList", prov->QueryDeviceList(guids, &size)) && size == sizeof guids;
  if (good) {
    a.guid = guids[0];
    b.guid = guids[1];
    good = open_side(prov, a) && open_side(prov, b) && connect_side(a, b) && connect_side(b, a) &&
           post_receive(a, 0) && post_receive(b, 0);
  }
  for (unsigned i = 0; good && i < iters; ++i) good = hop(a, b, 2 * i + 1) && hop(b, a, 2 * i + 2);
  close_side(a);
  close_side(b);
  prov->Release();
  if (!good) return 1;
  std::printf(
      "winverbs_pingpong: %u round trips of %u bytes between %s (guid 0x%016llx) and %s: ok\n",
      iters, kMsg, uris[0], static_cast<unsigned long long>(be64toh(guids[0])), uris[1]);
  return 0;
}
