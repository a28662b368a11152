// SPDX-License-Identifier: BSD-3-Clause
// The NT verbs' argument rules without a device (src/compat/nt_*.cpp):
// STATUS_INVALID_PARAMETER_n names the n-th argument (from 1, the request
// counted); a pointer that is not a live object of the right kind is
// STATUS_INVALID_HANDLE, never dereferenced; kbv_nt_query_interface checks
// its arguments before it opens anything.
#include <gtest/gtest.h>
#include <kbv/compat/ib_verbs.h>

#include <cstring>

#include "compat/nt_verbs.hpp"

namespace kbv::compat::nt {
namespace {

// Objects that were never created (garbage, not dereferenced by the verbs).
struct Bogus {
  Bogus() { std::memset(this, 0x5a, sizeof(*this)); }
  IB_CA ca;
  IB_PD pd;
  IB_CQ cq;
  IB_QP qp;
  IB_MR mr;
  IB_AH ah;
  IB_MW mw;
  uint64_t ctx[8];
};

class NtArgs : public ::testing::Test {
 protected:
  void SetUp() override { kbv_nt_init_request(&r_, KBV_EQ_NONE, 0, nullptr, nullptr); }
  IB_REQUEST r_{};
  Bogus b_;
};

TEST_F(NtArgs, QueryInterfaceChecksArgumentsInOrder) {
  IB_VERBS_INTERFACE_STANDARD i;
  const USHORT sz = sizeof(i);
  EXPECT_EQ(kbv_nt_query_interface(nullptr, &i, sz, IB_VERBS_INTERFACE_VERSION),
            STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(kbv_nt_query_interface("sim:a", nullptr, sz, IB_VERBS_INTERFACE_VERSION),
            STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(kbv_nt_query_interface("sim:a", &i, sz - 8, IB_VERBS_INTERFACE_VERSION),
            STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(kbv_nt_query_interface("sim:a", &i, sz, IB_VERBS_INTERFACE_VERSION + 1),
            STATUS_INVALID_PARAMETER_4);
  // A URI kbv does not know: kbv's KBV_ERR_INVALID_ARGUMENT, mapped.
  EXPECT_EQ(kbv_nt_query_interface("pci:0", &i, sz, IB_VERBS_INTERFACE_VERSION),
            STATUS_INVALID_PARAMETER);
}

TEST_F(NtArgs, CaVerbs) {
  EXPECT_EQ(OpenCa(nullptr, nullptr, nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(OpenCa(b_.ctx, nullptr, nullptr, nullptr, nullptr), STATUS_INVALID_PARAMETER_5);
  EXPECT_EQ(OpenCa(b_.ctx, nullptr, nullptr, nullptr, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(CloseCa(nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(CloseCa(&b_.ca, nullptr, nullptr), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(CloseCa(&b_.ca, nullptr, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(GetCaFatalEvent(nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(GetCaFatalEvent(&b_.ca, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(GetCaPortEvent(nullptr, 1, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(GetCaPortEvent(&b_.ca, 1, &r_), STATUS_INVALID_HANDLE);
  IB_CA_ATTR a;
  EXPECT_EQ(QueryCa(nullptr, sizeof(a), &a, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(QueryCa(b_.ctx, sizeof(a), &a, nullptr), STATUS_INVALID_PARAMETER_4);
  EXPECT_EQ(QueryCa(b_.ctx, sizeof(a), &a, &r_), STATUS_INVALID_HANDLE);
  IB_PORT_ATTR p;
  EXPECT_EQ(QueryPort(nullptr, 1, sizeof(p), &p, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(QueryPort(b_.ctx, 1, sizeof(p), &p, nullptr), STATUS_INVALID_PARAMETER_5);
  EXPECT_EQ(QueryPort(b_.ctx, 1, sizeof(p), &p, &r_), STATUS_INVALID_HANDLE);
  IB_MODIFY_CA mc{};
  EXPECT_EQ(ModifyCa(nullptr, 0, &mc, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(ModifyCa(&b_.ca, 0, &mc, &r_), STATUS_INVALID_HANDLE);
  IB_MODIFY_PORT mp{};
  EXPECT_EQ(ModifyPort(nullptr, 1, 0, &mp, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(ModifyPort(&b_.ca, 1, 0, &mp, &r_), STATUS_INVALID_HANDLE);
}

TEST_F(NtArgs, CqAndPdVerbs) {
  EXPECT_EQ(CreateCq(nullptr, 8, nullptr, nullptr, nullptr, nullptr, &r_),
            STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(CreateCq(&b_.ca, 8, nullptr, nullptr, nullptr, nullptr, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(DestroyCq(nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(DestroyCq(&b_.cq, nullptr, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(ResizeCq(nullptr, 8, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(ResizeCq(&b_.cq, 8, nullptr, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(RearmCq(nullptr, FALSE), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(RearmCq(&b_.cq, FALSE), STATUS_INVALID_HANDLE);
  EXPECT_EQ(RearmNCq(nullptr, 1), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(RearmNCq(&b_.cq, 1), STATUS_INVALID_HANDLE);
  IB_WC wc[2];
  LONG n = 2;
  EXPECT_EQ(PollCq(nullptr, &n, wc), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(PollCq(&b_.cq, nullptr, wc), STATUS_INVALID_PARAMETER_2);
  n = -1;
  EXPECT_EQ(PollCq(&b_.cq, &n, wc), STATUS_INVALID_PARAMETER_2);
  n = 2;
  EXPECT_EQ(PollCq(&b_.cq, &n, nullptr), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(PollCq(&b_.cq, &n, wc), STATUS_INVALID_HANDLE);
  EXPECT_EQ(PeekCq(nullptr, &n), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(PeekCq(&b_.cq, nullptr), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(PeekCq(&b_.cq, &n), STATUS_INVALID_HANDLE);
  EXPECT_EQ(GetCqCompEvent(nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(GetCqCompEvent(&b_.cq, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(GetCqAsyncEvent(nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(GetCqAsyncEvent(&b_.cq, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(CreatePd(nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(CreatePd(&b_.ca, nullptr, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(DestroyPd(nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(DestroyPd(&b_.pd, nullptr, &r_), STATUS_INVALID_HANDLE);
}

TEST_F(NtArgs, QpAhMrMwVerbs) {
  IB_QP_CREATE c{};
  EXPECT_EQ(CreateQp(nullptr, &c, nullptr, nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(CreateQp(&b_.pd, &c, nullptr, nullptr, nullptr, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(CreateSpecialQp(nullptr, 1, &c, nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(DestroyQp(nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(DestroyQp(&b_.qp, nullptr, &r_), STATUS_INVALID_HANDLE);
  IB_QP_MODIFY m{};
  EXPECT_EQ(ModifyQp(nullptr, &m, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(ModifyQp(&b_.qp, &m, nullptr, &r_), STATUS_INVALID_HANDLE);
  IB_QP_ATTR qa;
  EXPECT_EQ(QueryQp(nullptr, &qa, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(QueryQp(&b_.qp, &qa, nullptr, &r_), STATUS_INVALID_HANDLE);
  IB_SEND_WR* failed = nullptr;
  EXPECT_EQ(PostSend(nullptr, nullptr, &failed), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(PostSend(&b_.qp, nullptr, &failed), STATUS_INVALID_HANDLE);
  IB_RECV_WR* rfailed = nullptr;
  EXPECT_EQ(PostRecv(nullptr, nullptr, &rfailed), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(PostRecv(&b_.qp, nullptr, &rfailed), STATUS_INVALID_HANDLE);
  EXPECT_EQ(GetQpAsyncEvent(nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(GetQpAsyncEvent(&b_.qp, &r_), STATUS_INVALID_HANDLE);
  IB_AH_ATTR av{};
  IB_AH* ah = nullptr;
  EXPECT_EQ(CreateAh(nullptr, &av, &ah), STATUS_INVALID_HANDLE);
  EXPECT_EQ(CreateAh(&b_.pd, &av, &ah), STATUS_INVALID_HANDLE);
  EXPECT_EQ(DestroyAh(&b_.ah), STATUS_INVALID_HANDLE);
  EXPECT_EQ(ModifyAh(&b_.ah, &av), STATUS_INVALID_HANDLE);
  EXPECT_EQ(QueryAh(&b_.ah, &av), STATUS_INVALID_HANDLE);
  MDL mdl{nullptr, b_.ctx, 0, sizeof(b_.ctx)};
  EXPECT_EQ(RegMdl(nullptr, &mdl, IB_AC_LOCAL_WRITE, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(RegMdl(&b_.pd, &mdl, IB_AC_LOCAL_WRITE, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(RegScatterGather(nullptr, nullptr, 0, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(GetDmaMr(nullptr, 0, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(DeregMr(nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(DeregMr(&b_.mr, &r_), STATUS_INVALID_HANDLE);
  EXPECT_EQ(CreateMw(nullptr, nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(DestroyMw(nullptr, &r_), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(DestroyMw(&b_.mw, &r_), STATUS_INVALID_HANDLE);
  IB_BIND_WR bw{};
  EXPECT_EQ(BindMw(nullptr, &b_.mw, &bw), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(BindMw(&b_.qp, nullptr, &bw), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(BindMw(&b_.qp, &b_.mw, nullptr), STATUS_INVALID_PARAMETER_3);
}

TEST_F(NtArgs, UserDataIsAnsweredEmpty) {
  CI_UDATA u{nullptr, nullptr, 0, 99};
  no_udata(&u);
  EXPECT_EQ(u.OutputSize, 0u);
  no_udata(nullptr);  // may be NULL
}

}  // namespace
}  // namespace kbv::compat::nt
