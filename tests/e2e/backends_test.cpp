// SPDX-License-Identifier: BSD-3-Clause
// Platform backends on the model (issue 17): VFIO over iommufd and the VFIO
// device cdev, end to end — bring-up, objects, an RC pair with data,
// teardown with every IOAS mapping gone, device removal — plus the emulated
// kernel's iommufd errnos and the bad inputs (a function bound to another
// driver, no IOMMU group, iommufd absent).
#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/mman.h>

#include <cerrno>

#include "platform/device.hpp"
#include "platform/linux_uapi.hpp"
#include "platform/uio.hpp"
#include "sim/bus/vfio_kernel.hpp"
#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

namespace uapi = platform::uapi;

sim::Kernel& kernel() { return sim::Kernel::instance(); }

class Backends : public VerbsE2e {
 protected:
  void SetUp() override { kernel().set_iommufd(true); }
  void TearDown() override {
    VerbsE2e::TearDown();
    kernel().set_iommufd(false);
  }
  // A model HCA owned by the test, not opened.
  std::unique_ptr<sim::Model> model(std::string& name) {
    name = unique_name("bk");
    auto m = sim::Model::create(name);
    EXPECT_TRUE(m.has_value()) << m.status().to_string();
    return m ? std::move(*m) : nullptr;
  }
  // PD, CQ, MR and RC QP on each side, connected; a SEND (3000 bytes) and an
  // RDMA WRITE (5000 bytes) from da to db checked byte for byte; every
  // object destroyed again.
  void rc_pair_with_data(SimDev& da, SimDev& db) {
    std::vector<uint8_t> ba(1 << 16), bb(1 << 16);
    kbv_pd_t pa = alloc_pd(da), pb = alloc_pd(db);
    kbv_cq_t ca = make_cq(da), cb = make_cq(db);
    const uint32_t acc = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ;
    kbv_mr_t ma = 0, mb = 0;
    ASSERT_EQ(kbv_mr_reg(pa, ba.data(), ba.size(), acc, KBV_EQ_NONE, 0, &ma), KBV_SUCCESS);
    ASSERT_EQ(kbv_mr_reg(pb, bb.data(), bb.size(), acc, KBV_EQ_NONE, 0, &mb), KBV_SUCCESS);
    uint32_t la, ra, lb, rb;
    ASSERT_EQ(kbv_mr_get_keys(ma, &la, &ra), KBV_SUCCESS);
    ASSERT_EQ(kbv_mr_get_keys(mb, &lb, &rb), KBV_SUCCESS);
    kbv_qp_t qa = make_qp(pa, KBV_QPT_RC, ca, ca), qb = make_qp(pb, KBV_QPT_RC, cb, cb);
    uint32_t na, nb;
    ASSERT_EQ(kbv_qp_get_num(qa, &na), KBV_SUCCESS);
    ASSERT_EQ(kbv_qp_get_num(qb, &nb), KBV_SUCCESS);
    ASSERT_EQ(connect(qa, KBV_QPT_RC, db, nb), KBV_SUCCESS);
    ASSERT_EQ(connect(qb, KBV_QPT_RC, da, na, 200, 100), KBV_SUCCESS);

    // SEND 3000 bytes a -> b and RDMA WRITE 5000 bytes a -> b, byte for byte.
    for (size_t i = 0; i < ba.size(); ++i) ba[i] = static_cast<uint8_t>(i * 7 + 3);
    kbv_sge_t rs{reinterpret_cast<uint64_t>(bb.data()), 4096, lb};
    kbv_recv_wr_t rw{77, &rs, 1, 0};
    uint32_t bad = 0;
    ASSERT_EQ(kbv_post_recv(qb, &rw, 1, &bad), KBV_SUCCESS);
    kbv_sge_t ss{reinterpret_cast<uint64_t>(ba.data()), 3000, la};
    kbv_sge_t ws{reinterpret_cast<uint64_t>(ba.data()) + 8192, 5000, la};
    kbv_send_wr_t w[2]{};
    w[0].wr_id = 1;
    w[0].opcode = KBV_WR_SEND;
    w[0].flags = KBV_SEND_SIGNALED;
    w[0].sg_list = &ss;
    w[0].num_sge = 1;
    w[1].wr_id = 2;
    w[1].opcode = KBV_WR_RDMA_WRITE;
    w[1].flags = KBV_SEND_SIGNALED;
    w[1].sg_list = &ws;
    w[1].num_sge = 1;
    w[1].remote_addr = reinterpret_cast<uint64_t>(bb.data()) + 16384;
    w[1].rkey = rb;
    ASSERT_EQ(kbv_post_send(qa, w, 2, &bad), KBV_SUCCESS);
    size_t got_a = 0, got_b = 0;
    const auto end = std::chrono::steady_clock::now() + 10s;
    while ((got_a < 2 || got_b < 1) && std::chrono::steady_clock::now() < end) {
      kbv_wc_t wc[4];
      int k = kbv_poll_cq(ca, wc, 4);
      for (int i = 0; i < k; ++i) EXPECT_EQ(wc[i].status, KBV_SUCCESS);
      got_a += k > 0 ? k : 0;
      k = kbv_poll_cq(cb, wc, 4);
      for (int i = 0; i < k; ++i) {
        EXPECT_EQ(wc[i].status, KBV_SUCCESS);
        EXPECT_EQ(wc[i].wr_id, 77u);
        EXPECT_EQ(wc[i].byte_len, 3000u);
      }
      got_b += k > 0 ? k : 0;
      if (got_a < 2 || got_b < 1) std::this_thread::sleep_for(20us);
    }
    ASSERT_EQ(got_a, 2u);
    ASSERT_EQ(got_b, 1u);
    EXPECT_EQ(std::memcmp(bb.data(), ba.data(), 3000), 0);
    EXPECT_EQ(std::memcmp(bb.data() + 16384, ba.data() + 8192, 5000), 0);

    EXPECT_EQ(kbv_qp_destroy(qa, KBV_EQ_NONE, 0), KBV_SUCCESS);
    EXPECT_EQ(kbv_qp_destroy(qb, KBV_EQ_NONE, 0), KBV_SUCCESS);
    EXPECT_EQ(kbv_mr_dereg(ma, KBV_EQ_NONE, 0), KBV_SUCCESS);
    EXPECT_EQ(kbv_mr_dereg(mb, KBV_EQ_NONE, 0), KBV_SUCCESS);
    EXPECT_EQ(kbv_cq_destroy(ca, KBV_EQ_NONE, 0), KBV_SUCCESS);
    EXPECT_EQ(kbv_cq_destroy(cb, KBV_EQ_NONE, 0), KBV_SUCCESS);
    EXPECT_EQ(kbv_pd_dealloc(pa, KBV_EQ_NONE, 0), KBV_SUCCESS);
    EXPECT_EQ(kbv_pd_dealloc(pb, KBV_EQ_NONE, 0), KBV_SUCCESS);
  }
  // A model bound to `driver` first, then opened through the C API as "sim:<name>".
  SimDev& open_bound(const char* driver) {
    auto d = std::make_unique<SimDev>();
    std::string name;
    d->model = model(name);
    EXPECT_EQ(kernel().bind_driver(name, driver), KBV_SUCCESS);
    d->uri = "sim:" + name;
    kbv_status_t st = kbv_device_open(d->uri.c_str(), nullptr, KBV_EQ_NONE, 0, &d->dev);
    EXPECT_EQ(st, KBV_SUCCESS) << kbv_status_name(st);
    if (st == KBV_SUCCESS) wait_port_active(*d);
    devs_.push_back(std::move(d));
    return *devs_.back();
  }
};

TEST_F(Backends, IommufdRcPairWithDataAndTeardown) {
  // Bring-up through the public API: "sim:" follows the function's driver
  // (vfio-pci), and with /dev/iommu and the cdev present that is iommufd.
  SimDev& da = open_dev();
  SimDev& db = open_dev();
  ASSERT_FALSE(HasFailure());
  const uint64_t mapped_after_open = kernel().iommufd_mapped_bytes();
  EXPECT_GT(mapped_after_open, 0u) << "the devices did not map through an iommufd IOAS";

  rc_pair_with_data(da, db);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(kernel().iommufd_mapped_bytes(), mapped_after_open);  // the MRs' mappings went
  // Teardown: the devices; every IOAS mapping is gone and the functions
  // are free to be removed.
  for (SimDev* d : {&da, &db}) {
    EXPECT_EQ(kbv_device_close(d->dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
    d->dev = 0;
  }
  EXPECT_EQ(kernel().iommufd_mapped_bytes(), 0u);
  for (SimDev* d : {&da, &db}) {
    EXPECT_TRUE(d->model->device().dma_map().mappings().empty());
    d->model.reset();  // device removal: nothing holds the function any more
  }
}

TEST_F(Backends, IommufdUriOpensThroughTheCdevAndClosesClean) {
  std::string name;
  auto m = model(name);
  ASSERT_TRUE(m);
  const std::string bdf = *kernel().bdf(name);
  auto h = platform::DeviceHandle::open(kernel(), "iommufd:" + bdf);
  ASSERT_TRUE(h.has_value()) << h.status().to_string();
  EXPECT_EQ((*h)->backend().kind(), platform::BackendKind::kIommufd);
  {
    auto buf = (*h)->dma().alloc(8192);
    ASSERT_TRUE(buf.has_value());
    EXPECT_EQ(kernel().iommufd_mapped_bytes(), buf->size());
    EXPECT_EQ(m->device().dma_map().mappings().size(), 1u);  // the attached device sees it
  }
  EXPECT_EQ(kernel().iommufd_mapped_bytes(), 0u);
  // While open, the function cannot be removed or rebound.
  EXPECT_EQ(kernel().remove_device(name), KBV_ERR_BUSY);
  EXPECT_EQ(kernel().bind_driver(name, "mlx5_core"), KBV_ERR_BUSY);
  h->reset();
  EXPECT_EQ(kernel().iommufd_mapped_bytes(), 0u);
  // "vfio:" picks iommufd by itself; without /dev/iommu it falls back to type1.
  auto v = platform::DeviceHandle::open(kernel(), "vfio:" + bdf);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ((*v)->backend().kind(), platform::BackendKind::kIommufd);
  v->reset();
  kernel().set_iommufd(false);
  v = platform::DeviceHandle::open(kernel(), "vfio:" + bdf);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ((*v)->backend().kind(), platform::BackendKind::kVfioType1);
  v->reset();
  // "iommufd:" without iommufd: a clear error, nothing left open.
  EXPECT_EQ(platform::DeviceHandle::open(kernel(), "iommufd:" + bdf).status(),
            KBV_ERR_NOT_SUPPORTED);
  kernel().set_iommufd(true);
}

TEST_F(Backends, BadInputLeavesNothingOpenOrMapped) {
  std::string name;
  auto m = model(name);
  ASSERT_TRUE(m);
  const std::string bdf = *kernel().bdf(name);
  // Bound to another driver.
  ASSERT_EQ(kernel().bind_driver(name, "mlx5_core"), KBV_SUCCESS);
  for (const char* scheme : {"iommufd:", "vfio:"})
    EXPECT_EQ(platform::DeviceHandle::open(kernel(), scheme + bdf).status(), KBV_ERR_INVALID_STATE)
        << scheme;
  kbv_device_t dev = 0;
  EXPECT_EQ(kbv_device_open(("sim:" + name).c_str(), nullptr, KBV_EQ_NONE, 0, &dev),
            KBV_ERR_INVALID_STATE);
  // No IOMMU group: no cdev, no group.
  ASSERT_EQ(kernel().bind_driver(name, "vfio-pci"), KBV_SUCCESS);
  ASSERT_EQ(kernel().set_iommu_group(name, false), KBV_SUCCESS);
  EXPECT_EQ(platform::DeviceHandle::open(kernel(), "iommufd:" + bdf).status(),
            KBV_ERR_INVALID_STATE);
  EXPECT_EQ(platform::DeviceHandle::open(kernel(), "vfio:" + bdf).status(), KBV_ERR_INVALID_STATE);
  // Nothing was left open (the function can be rebound) or mapped.
  EXPECT_EQ(kernel().set_iommu_group(name, true), KBV_SUCCESS);
  EXPECT_EQ(kernel().iommufd_mapped_bytes(), 0u);
  EXPECT_TRUE(m->device().dma_map().mappings().empty());
}

// UIO, end to end: two functions bound to uio_pci_generic in a machine
// with huge pages and no IOMMU; "sim:" follows the driver to the UIO
// backend. Every huge page goes back to the pool and every model
// descriptor is closed at the end.
TEST_F(Backends, UioRcPairWithDataAndTeardown) {
  kernel().set_huge_pages(64);
  const size_t fds_before = kernel().descriptors();
  SimDev& da = open_bound("uio_pci_generic");
  SimDev& db = open_bound("uio_pci_generic");
  ASSERT_FALSE(HasFailure());
  EXPECT_LT(kernel().huge_pages_free(), 64u);
  rc_pair_with_data(da, db);
  ASSERT_FALSE(HasFailure());
  for (SimDev* d : {&da, &db}) {
    EXPECT_EQ(kbv_device_close(d->dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
    d->dev = 0;
  }
  EXPECT_EQ(kernel().huge_pages_free(), 64u);
  EXPECT_EQ(kernel().descriptors(), fds_before);
  for (SimDev* d : {&da, &db}) d->model.reset();  // device removal
  kernel().set_huge_pages(0);
}

TEST_F(Backends, UioUriPhysicalAddressesPinnedAndReturned) {
  kernel().set_huge_pages(8);
  std::string name;
  auto m = model(name);
  ASSERT_TRUE(m);
  ASSERT_EQ(kernel().bind_driver(name, "uio_pci_generic"), KBV_SUCCESS);
  const std::string bdf = *kernel().bdf(name);
  const size_t fds_before = kernel().descriptors();
  auto h = platform::DeviceHandle::open(kernel(), "uio:" + bdf);
  ASSERT_TRUE(h.has_value()) << h.status().to_string();
  auto& uio = static_cast<platform::UioDevice&>((*h)->backend());
  EXPECT_EQ(uio.kind(), platform::BackendKind::kUio);
  EXPECT_EQ(uio.msix_vector_count(), 0u);
  EXPECT_EQ(uio.enable_msix(1), KBV_ERR_NOT_SUPPORTED);
  // Bus mastering through config space.
  ASSERT_EQ(uio.enable_bus_master(), KBV_SUCCESS);
  EXPECT_TRUE(*uio.config_read16(platform::PciBackend::kPciCommandOffset) &
              platform::PciBackend::kPciCommandMaster);
  EXPECT_TRUE(m->device().bus_master());
  {
    // Driver memory: physically contiguous, the device reaches it at its
    // physical address (no IOMMU), pinned.
    auto a = (*h)->dma().alloc(16384);
    auto b = (*h)->dma().alloc(8192);
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(m->device().dma_map().translate(a->iova(), 16384, 3),
              static_cast<std::byte*>(a->va()));
    EXPECT_EQ(m->device().dma_map().translate(b->iova(), 8192, 3),
              static_cast<std::byte*>(b->va()));
    EXPECT_NE(a->iova(), reinterpret_cast<uint64_t>(a->va()));  // physical, not virtual
    EXPECT_GT(uio.pinned_pages(), 0u);
    // 4 MiB would span two huge pages that are not physically adjacent.
    EXPECT_EQ((*h)->dma().alloc(4u << 20).status(), KBV_ERR_NO_MEMORY);
    // A registration: one physical address per page, each reaching its page.
    std::vector<uint8_t> app(5 * 4096 + 100, 1);
    auto r = (*h)->dma().register_memory(app.data() + 100, 5 * 4096);
    ASSERT_TRUE(r.has_value());
    for (size_t i = 0; i < r->mapped_size() / 4096; ++i) {
      const auto page =
          (reinterpret_cast<uintptr_t>(app.data() + 100) & ~uintptr_t{4095}) + i * 4096;
      EXPECT_EQ(m->device().dma_map().translate(r->page_iova(i), 4096, 3),
                reinterpret_cast<std::byte*>(page))
          << i;
    }
  }
  h->reset();
  EXPECT_EQ(kernel().huge_pages_free(), 8u);
  EXPECT_EQ(kernel().descriptors(), fds_before);
  kernel().set_huge_pages(0);
}

TEST_F(Backends, UioBadInputLeavesNothingOpenOrPinned) {
  std::string name;
  auto m = model(name);
  ASSERT_TRUE(m);
  const std::string bdf = *kernel().bdf(name);
  const size_t fds_before = kernel().descriptors();
  // Bound to vfio-pci, not uio_pci_generic.
  EXPECT_EQ(platform::DeviceHandle::open(kernel(), "uio:" + bdf).status(), KBV_ERR_INVALID_STATE);
  // No huge pages in the machine: a clear status, nothing left open.
  ASSERT_EQ(kernel().bind_driver(name, "uio_pci_generic"), KBV_SUCCESS);
  kernel().set_huge_pages(0);
  EXPECT_EQ(platform::DeviceHandle::open(kernel(), "uio:" + bdf).status(), KBV_ERR_NO_MEMORY);
  kbv_device_t dev = 0;
  EXPECT_EQ(kbv_device_open(("sim:" + name).c_str(), nullptr, KBV_EQ_NONE, 0, &dev),
            KBV_ERR_NO_MEMORY);
  EXPECT_EQ(kernel().descriptors(), fds_before);
  EXPECT_FALSE(m->device().bus_master());
}

// The emulated iommufd answers with Linux's errnos.
TEST_F(Backends, IommufdErrnosAsLinux) {
  std::string name;
  auto m = model(name);
  ASSERT_TRUE(m);
  sim::Kernel& k = kernel();
  const int slot = std::stoi(k.bdf(name)->substr(8, 2), nullptr, 16);
  const std::string cdev = "/dev/vfio/devices/vfio" + std::to_string(slot);
  const int ifd = k.open("/dev/iommu", O_RDWR);
  ASSERT_GE(ifd, 0);
  const int dfd = k.open(cdev.c_str(), O_RDWR);
  ASSERT_GE(dfd, 0) << cdev;
  // Before BIND every device ioctl is EINVAL.
  vfio_device_info info{};
  info.argsz = sizeof info;
  EXPECT_EQ(k.ioctl(dfd, VFIO_DEVICE_GET_INFO, &info), -1);
  EXPECT_EQ(errno, EINVAL);
  // BIND with a descriptor that is not an iommufd: EBADFD.
  uapi::kbv_vfio_device_bind_iommufd b{sizeof b, 0, dfd, 0};
  EXPECT_EQ(k.ioctl(dfd, uapi::kVfioDeviceBindIommufd, &b), -1);
  EXPECT_EQ(errno, EBADFD);
  b.iommufd = ifd;
  ASSERT_EQ(k.ioctl(dfd, uapi::kVfioDeviceBindIommufd, &b), 0);
  EXPECT_EQ(k.ioctl(dfd, uapi::kVfioDeviceBindIommufd, &b), -1);  // twice
  EXPECT_EQ(errno, EINVAL);
  // The group cannot be opened while the cdev is bound.
  EXPECT_EQ(k.open(("/dev/vfio/" + std::to_string(k.iommu_group(name))).c_str(), O_RDWR), -1);
  EXPECT_EQ(errno, EBUSY);
  uapi::kbv_iommu_ioas_alloc a{sizeof a, 0, 0};
  ASSERT_EQ(k.ioctl(ifd, uapi::kIommuIoasAlloc, &a), 0);
  uapi::kbv_vfio_device_attach_iommufd_pt at{sizeof at, 0, a.out_ioas_id + 100};
  EXPECT_EQ(k.ioctl(dfd, uapi::kVfioDeviceAttachIommufdPt, &at), -1);
  EXPECT_EQ(errno, ENOENT);
  at.pt_id = a.out_ioas_id;
  ASSERT_EQ(k.ioctl(dfd, uapi::kVfioDeviceAttachIommufdPt, &at), 0);
  // Ranges: EMSGSIZE with the count when the array is too small.
  uapi::kbv_iommu_ioas_iova_ranges q{sizeof q, a.out_ioas_id, 0, 0, 0, 0};
  EXPECT_EQ(k.ioctl(ifd, uapi::kIommuIoasIovaRanges, &q), -1);
  EXPECT_EQ(errno, EMSGSIZE);
  EXPECT_GE(q.num_iovas, 1u);
  EXPECT_EQ(q.out_iova_alignment, 4096u);
  // MAP, overlap EEXIST, unknown flag EOPNOTSUPP, UNMAP of nothing ENOENT.
  void* mem = ::mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  uapi::kbv_iommu_ioas_map mp{};
  mp.size = sizeof mp;
  mp.flags =
      uapi::kIommuIoasMapFixedIova | uapi::kIommuIoasMapReadable | uapi::kIommuIoasMapWriteable;
  mp.ioas_id = a.out_ioas_id;
  mp.user_va = reinterpret_cast<uintptr_t>(mem);
  mp.length = 1 << 16;
  mp.iova = 1ull << 32;
  ASSERT_EQ(k.ioctl(ifd, uapi::kIommuIoasMap, &mp), 0);
  EXPECT_EQ(m->device().dma_map().mappings().size(), 1u);
  EXPECT_EQ(k.ioctl(ifd, uapi::kIommuIoasMap, &mp), -1);
  EXPECT_EQ(errno, EEXIST);
  mp.flags |= 1u << 7;
  EXPECT_EQ(k.ioctl(ifd, uapi::kIommuIoasMap, &mp), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  uapi::kbv_iommu_ioas_unmap um{sizeof um, a.out_ioas_id, 1ull << 33, 4096};
  EXPECT_EQ(k.ioctl(ifd, uapi::kIommuIoasUnmap, &um), -1);
  EXPECT_EQ(errno, ENOENT);
  um.iova = 1ull << 32;  // splitting the area
  EXPECT_EQ(k.ioctl(ifd, uapi::kIommuIoasUnmap, &um), -1);
  EXPECT_EQ(errno, ENOENT);
  // An attached IOAS cannot be destroyed.
  uapi::kbv_iommu_destroy d{sizeof d, a.out_ioas_id};
  EXPECT_EQ(k.ioctl(ifd, uapi::kIommuDestroy, &d), -1);
  EXPECT_EQ(errno, EBUSY);
  // Closing the cdev detaches (the device's view empties); the IOAS keeps
  // its mapping until the iommufd closes.
  EXPECT_EQ(k.close(dfd), 0);
  EXPECT_TRUE(m->device().dma_map().mappings().empty());
  EXPECT_EQ(k.iommufd_mapped_bytes(), 1u << 16);
  EXPECT_EQ(k.close(ifd), 0);
  EXPECT_EQ(k.iommufd_mapped_bytes(), 0u);
  ::munmap(mem, 1 << 16);
}

}  // namespace
}  // namespace kbv::test
