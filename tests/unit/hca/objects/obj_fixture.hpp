// SPDX-License-Identifier: BSD-3-Clause
// Fixture for the driver-object tests (cq_test, qp_test, srq_test): an Hca
// brought up on the fake device by the scripted firmware with object limits
// in its capabilities, and a helper that drives one asynchronous call.
#pragma once

#include <optional>

#include "../hca_fixture.hpp"
#include "hca/prm/hca_cap.hpp"

namespace kbv::hca::test {

class ObjFixture : public HcaFixture {
 protected:
  void SetUp() override {
    // The "current" general caps the scripted firmware answers with.
    std::vector<std::byte> cap(4096);
    prm::Ref<prm::cmd_hca_cap> c(cap.data());
    c.set(prm::cmd_hca_cap::log_max_qp, 17);
    c.set(prm::cmd_hca_cap::log_max_qp_sz, 15);
    c.set(prm::cmd_hca_cap::log_max_cq, 16);
    c.set(prm::cmd_hca_cap::log_max_cq_sz, 12);
    c.set(prm::cmd_hca_cap::log_max_srq, 16);
    c.set(prm::cmd_hca_cap::log_max_srq_sz, 10);
    c.set(prm::cmd_hca_cap::num_ports, 1);
    c.set(prm::cmd_hca_cap::log_max_msg, 30);
    c.set(prm::cmd_hca_cap::roce, 1);
    c.set(prm::cmd_hca_cap::rc, 1);
    c.set(prm::cmd_hca_cap::uc, 1);
    c.set(prm::cmd_hca_cap::ud, 1);
    c.set(prm::cmd_hca_cap::max_wqe_sz_sq, 512);
    c.set(prm::cmd_hca_cap::max_wqe_sz_rq, 256);
    c.set(prm::cmd_hca_cap::log_max_pd, 16);
    sfw.set_caps_block = cap;
    bring_up();
    baseline = dev.live_dma();
  }

  // Runs submit(callback) and drives the firmware until the callback ran.
  template <class T, class F>
  Result<T> run(F submit) {
    std::optional<Result<T>> out;
    Status s = submit([&](Result<T> r) { out.emplace(std::move(r)); });
    if (s != KBV_PENDING) return s;
    if (!drive([&] { return out.has_value(); })) return Status{KBV_ERR_TIMEOUT};
    return std::move(*out);
  }
  template <class F>
  Status run_status(F submit) {
    std::optional<Status> out;
    Status s = submit([&](Status r) { out = r; });
    if (s != KBV_PENDING) return s;
    if (!drive([&] { return out.has_value(); })) return Status{KBV_ERR_TIMEOUT};
    return *out;
  }

  size_t baseline = 0;  // DMA blocks held after bring-up
};

}  // namespace kbv::hca::test
