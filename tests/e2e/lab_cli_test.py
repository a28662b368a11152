#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kbv-lab as a program on model HCAs (each run creates its own sim: device):
every subcommand's exit status and --json output (parsed as JSON), and model
faults through KBV_SIM_FAULTS (README "Fault injection"): a firmware command
failing during bring-up, a health fatal after INIT_HCA.

Usage: lab_cli_test.py KBV_LAB
"""
import json
import os
import subprocess
import sys

# A cross build runs its programs behind the exe wrapper meson exports
# (MESON_EXE_WRAPPER, e.g. qemu-aarch64; tests/e2e/exe_wrapper.hpp).
WRAPPER = os.environ.get("MESON_EXE_WRAPPER", "").split()


def run(lab, args, faults=None, timeout=120, init_ms=None):
    env = dict(os.environ)
    env.pop("KBV_SIM_FAULTS", None)
    if faults:
        env["KBV_SIM_FAULTS"] = faults
    if init_ms == "default":
        env.pop("KBV_SIM_INIT_MS", None)  # the model's own, silicon-like 1 s
    elif init_ms is not None:
        env["KBV_SIM_INIT_MS"] = str(init_ms)
    p = subprocess.run(WRAPPER + [lab] + args, env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check(cond, what, out=""):
    if not cond:
        print(f"FAIL: {what}\n{out}")
        sys.exit(1)
    print(f"ok: {what}")


def main():
    lab = sys.argv[1]
    dev = f"sim:lab{os.getpid()}"

    rc, out, err = run(lab, ["bringup", dev, "--json"])
    check(rc == 0, "bringup exits 0", out + err)
    j = json.loads(out)
    cmds = [s["command"] for s in j["steps"]]
    # The port-state query kbv issues once bring-up is done (so a link that
    # came up before the async EQ is still reported) may complete before
    # the device is handed back, or after.
    if cmds and cmds[-1] == "QUERY_VPORT_STATE":
        cmds = cmds[:-1]
    check(j["ok"] and cmds[0] == "ENABLE_HCA" and "INIT_HCA" in cmds and cmds[-1] == "CREATE_EQ",
          "bringup lists ENABLE_HCA .. INIT_HCA .. CREATE_EQ", out)
    check(all(s["status"] == "KBV_SUCCESS" and s["ref"] and s["step"] for s in j["steps"]),
          "every step succeeded and names itself and its PRM / mlx5_ifc.h reference", out)

    # SET_HCA_CAP (0x109) fails once with BAD_PARAM: bring-up stops there.
    rc, out, err = run(lab, ["bringup", dev, "--json"], faults="cmd_fail=0x109:0x3:1")
    check(rc == 1, "bringup with a failing SET_HCA_CAP exits 1", out + err)
    j = json.loads(out)
    check(not j["ok"] and j["failure"]["command"] == "SET_HCA_CAP"
          and j["failure"]["fw_status_name"] == "BAD_PARAM_ERR"
          and j["failure"]["status"] == "KBV_ERR_FW_BAD_PARAM", "the failure is decoded", out)
    check(j["steps"][-1]["command"] == "SET_HCA_CAP"
          and all(s["command"] != "INIT_HCA" for s in j["steps"]),
          "the listing stops at the failing step", out)
    rc, out, err = run(lab, ["bringup", dev], faults="cmd_fail=0x102:0x4:1")
    check(rc == 1 and "bring-up FAILED: KBV_ERR_FW_BAD_SYS_STATE" in out and "at INIT_HCA" in out,
          "text: a failing INIT_HCA is named with its status", out + err)

    rc, out, err = run(lab, ["caps", dev, "--json"])
    check(rc == 0, "caps exits 0", out + err)
    j = json.loads(out)
    g = j["general"]
    check(len(g) > 250 and g["log_max_qp"]["cur"] == g["log_max_qp"]["max"]
          and g["cmdif_checksum"]["cur"] == 0 and g["device_frequency_khz"]["cur"] == 1000000,
          "caps: every general field with cur and max", out[:2000])
    check("roce_version" in j["roce"], "caps: the RoCE fields", out[:2000])

    rc, out, err = run(lab, ["port", dev, "--json"])
    j = json.loads(out)
    check(rc == 0 and j["paos"] == {"admin_status": "up", "oper_status": "up"}
          and j["ptys"]["oper"] == "100GBASE-CR4" and j["pmtu"]["max_mtu"] == 9216,
          "port: PAOS up/up, PTYS 100GBASE-CR4, PMTU", out)
    rc, out, err = run(lab, ["port", dev, "--set", "down", "--json"])
    j = json.loads(out)
    check(rc == 0 and j["paos"]["oper_status"] == "down" and j["ptys"]["eth_proto_oper"] == 0,
          "port --set down takes the link down", out)

    rc, out, err = run(lab, ["counters", dev, "--json", "--watch", "20ms", "--count", "2"])
    j = json.loads(out)
    check(rc == 0 and "ieee_802_3.a_frame_check_sequence_errors" in j["counters"]
          and len(j["intervals"]) == 2 and j["intervals"][0]["interval_ms"] == 20,
          "counters with two watch intervals", out)

    rc, out, err = run(lab, ["selftest", dev, "--json"])
    j = json.loads(out)
    check(rc == 0 and j["ok"] and [o["op"] for o in j["ops"]] ==
          ["SEND", "SEND_IMM", "RDMA_WRITE", "RDMA_WRITE_IMM", "RDMA_READ", "ATOMIC_FA",
           "ATOMIC_CS"] and all(o["ok"] for o in j["ops"]),
          "selftest: every opcode, data checked", out)
    # Under wire faults RC still delivers: the self-test passes.
    rc, out, err = run(lab, ["selftest", dev, "--json"], faults="drop=0.05,corrupt=0.02,seed=3")
    check(rc == 0 and json.loads(out)["ok"], "selftest under drop/corrupt faults", out + err)

    rc, out, err = run(lab, ["reset", dev, "--json"])
    j = json.loads(out)
    check(rc == 0 and j["ok"] and j["brought_up"], "reset: FLR then bring-up again", out)
    # With the model's default timing (KBV_SIM_INIT_MS unset; the test setup
    # sets 10 ms) the firmware keeps `initializing` set for 1 s after a
    # function reset (DeviceConfig::init_time): the open (vfio-pci resets the
    # function) and the reset each wait for it, and kbv-lab says how long.
    # The lower bound leaves room for the driver's work between the reset
    # and its first look at the register.
    rc, out, err = run(lab, ["reset", dev, "--json"], init_ms="default")
    j = json.loads(out)
    check(rc == 0 and j["ok"] and j["init_wait_us"] >= 500000 and
          j["bringup_us"] >= j["init_wait_us"] and j["open_us"] >= 500000,
          "reset with the model's default init time: about 1 s of initializing", out + err)
    rc, out, err = run(lab, ["reset", dev], init_ms=0)
    check(rc == 0 and "firmware initializing (init segment 0x1FC bit 31" in out,
          "reset text: the initializing wait printed", out + err)

    rc, out, err = run(lab, ["health", dev, "--json"])
    j = json.loads(out)
    check(rc == 0 and j["now"]["healthy"], "health: a healthy buffer", out)
    # The model's health buffer reports a fatal syndrome 50 ms after INIT_HCA.
    rc, out, err = run(lab, ["health", dev, "--json", "--wait", "20000"], faults="fatal_after_ms=50")
    j = json.loads(out)
    check(rc == 1 and j["now"]["synd"] == 1 and j["now"]["ext_synd"] == 0x5eed
          and j["now"]["synd_name"] == "firmware internal error" and j["now"]["rfr"],
          "health --wait: the fatal syndrome decoded", out + err)

    rc, out, err = run(lab, ["bogus"])
    check(rc == 2, "a usage error exits 2", out + err)
    print("kbv-lab: all subcommands ok")


if __name__ == "__main__":
    main()
