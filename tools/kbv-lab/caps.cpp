// SPDX-License-Identifier: BSD-3-Clause
// kbv-lab caps URI: every capability field kbv's tables name (general =
// cmd_hca_cap, RoCE = roce_cap, atomic = atomic_caps; cap_fields.cpp), the
// current value (what bring-up left in effect) beside the maximum (what the
// device supports); fields that differ are marked. --json: one object per
// type, {"field": {"cur": N, "max": M}}, in table order — diffable between
// two devices or two firmware versions.
#include <fmt/format.h>

#include "kbv-lab/lab.hpp"

namespace kbv::lab {

namespace {

struct Type {
  const char* name;
  uint16_t cap_type;
  const std::vector<CapField>& (*fields)();
};

constexpr Type kTypes[] = {
    {"general", KBV_CAP_GENERAL, general_cap_fields},
    {"roce", KBV_CAP_ROCE, roce_cap_fields},
    {"atomic", 3, atomic_cap_fields},
};

}  // namespace

int cmd_caps(const Common& c) {
  kbv_device_t dev = open_device(c);
  if (!dev) return 1;
  int rc = 0;
  Json j;
  j.obj().kv("uri", c.uri);
  for (const Type& t : kTypes) {
    std::vector<std::byte> cur(KBV_HCA_CAP_BYTES), max(KBV_HCA_CAP_BYTES);
    kbv_status_t s1 = kbv_device_query_hca_cap(dev, t.cap_type, KBV_CAP_CUR, cur.data(),
                                               KBV_HCA_CAP_BYTES, KBV_EQ_NONE, 0);
    kbv_status_t s2 = kbv_device_query_hca_cap(dev, t.cap_type, KBV_CAP_MAX, max.data(),
                                               KBV_HCA_CAP_BYTES, KBV_EQ_NONE, 0);
    if (s1 != KBV_SUCCESS || s2 != KBV_SUCCESS) {
      const kbv_status_t s = s1 != KBV_SUCCESS ? s1 : s2;
      if (c.json) {
        j.key(t.name).obj().kv("error", kbv_status_name(s)).end();
      } else {
        fmt::print(c.out, "{} caps: {}\n", t.name, describe(s, 0, 0));
      }
      // A type the device does not have is an answer, not a tool failure;
      // the general caps must be there.
      if (t.cap_type == KBV_CAP_GENERAL) rc = 1;
      continue;
    }
    if (c.json) {
      j.key(t.name).obj();
      for (const CapField& f : t.fields())
        j.key(f.name).obj().kv("cur", get_field(cur, f)).kv("max", get_field(max, f)).end();
      j.end();
    } else {
      fmt::print(c.out, "{} caps (QUERY_HCA_CAP type {}): {:<40} {:>12} {:>12}\n", t.name,
                 t.cap_type, "field", "current", "max");
      for (const CapField& f : t.fields()) {
        const uint64_t a = get_field(cur, f), b = get_field(max, f);
        fmt::print(c.out, "  {:<56} {:>12} {:>12}{}\n", f.name, a, b, a != b ? "  *" : "");
      }
    }
  }
  j.end();
  if (c.json) fmt::print(c.out, "{}\n", j.text());
  close_device(dev);
  return rc;
}

}  // namespace kbv::lab
